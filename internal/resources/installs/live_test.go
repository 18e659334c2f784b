package installs_test

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// liveWork is a workload running through an upgrade: its object and its
// running pods, recorded before and checked after, so that an upgrade that
// re-created the object or restarted a pod fails the test.
type liveWork struct {
	object  acctest.Object
	pods    acctest.Pods
	running int
	uid     string
	podUIDs map[string]bool
}

func newLiveWork(object acctest.Object, pods acctest.Pods, running int) *liveWork {
	return &liveWork{object: object, pods: pods, running: running}
}

// record waits for the running pods and notes the UIDs.
func (l *liveWork) record(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := l.object.Get(env)
		if err != nil || obj == nil {
			return fmt.Errorf("%s before the upgrade: %v", l.name(), err)
		}
		l.uid = string(obj.GetUID())
		live, err := l.pods.Await(env, 2*time.Minute, acctest.RunningPods(l.running))
		l.podUIDs = map[string]bool{}
		for _, p := range live {
			l.podUIDs[string(p.UID)] = true
		}
		return err
	}
}

// kept checks that the object and every pod recorded are the same ones,
// still running.
func (l *liveWork) kept(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := l.object.Get(env)
		if err != nil || obj == nil {
			return fmt.Errorf("%s after the upgrade: %v", l.name(), err)
		}
		if string(obj.GetUID()) != l.uid {
			return fmt.Errorf("%s was re-created by the upgrade: UID %s, was %s", l.name(), obj.GetUID(), l.uid)
		}
		live, err := l.pods.Await(env, time.Minute, acctest.RunningPods(l.running))
		if err != nil {
			return err
		}
		for _, p := range live {
			if !l.podUIDs[string(p.UID)] {
				return fmt.Errorf("pod %s is new after the upgrade: the pods of %s were restarted (%s)", p.Name, l.name(), acctest.DescribePods(live))
			}
		}
		return nil
	}
}

func (l *liveWork) name() string { return l.object.GVR.Resource + "/" + l.object.Name }

package acctest

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// LiveWork is a workload running through an upgrade: its object and its
// running pods, recorded before and checked after, so that an upgrade that
// re-created the object or restarted a pod fails the test.
type LiveWork struct {
	object  Object
	pods    Pods
	running int
	uid     string
	podUIDs map[string]bool
}

// NewLiveWork is the object and its pods, running of them.
func NewLiveWork(object Object, pods Pods, running int) *LiveWork {
	return &LiveWork{object: object, pods: pods, running: running}
}

// Record waits for the running pods and notes the UIDs.
func (l *LiveWork) Record(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := l.object.Get(env)
		if err != nil || obj == nil {
			return fmt.Errorf("%s before the upgrade: %v", l.name(), err)
		}
		l.uid = string(obj.GetUID())
		live, err := l.pods.Await(env, 2*time.Minute, RunningPods(l.running))
		l.podUIDs = map[string]bool{}
		for _, p := range live {
			l.podUIDs[string(p.UID)] = true
		}
		return err
	}
}

// Kept checks that the object and every pod recorded are the same ones,
// still running.
func (l *LiveWork) Kept(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := l.object.Get(env)
		if err != nil || obj == nil {
			return fmt.Errorf("%s after the upgrade: %v", l.name(), err)
		}
		if string(obj.GetUID()) != l.uid {
			return fmt.Errorf("%s was re-created by the upgrade: UID %s, was %s", l.name(), obj.GetUID(), l.uid)
		}
		live, err := l.pods.Await(env, time.Minute, RunningPods(l.running))
		if err != nil {
			return err
		}
		for _, p := range live {
			if !l.podUIDs[string(p.UID)] {
				return fmt.Errorf("pod %s is new after the upgrade: the pods of %s were restarted (%s)", p.Name, l.name(), DescribePods(live))
			}
		}
		return nil
	}
}

func (l *LiveWork) name() string { return l.object.GVR.Resource + "/" + l.object.Name }

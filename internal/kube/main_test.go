package kube_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// With TF_ACC, one API server for the package's acceptance tests
// (preview_acc_test.go); without it, only the unit tests run.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}) }

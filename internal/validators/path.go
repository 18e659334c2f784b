package validators

import (
	"fmt"
	"path"
	"strings"
)

// AbsolutePath checks that p is a clean absolute path inside a container that
// is not the root directory (which, as the error says, cannot be used the way
// the attribute means: "hold a cache", "be a mount point"), and has no ':' or
// control character (the kubelet refuses those in mount paths).
func AbsolutePath(p, rootUse string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not an absolute path", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path (write %q)", p, path.Clean(p))
	case p == "/":
		return fmt.Errorf("%q: the root directory cannot %s", p, rootUse)
	case strings.ContainsAny(p, ":\x00\n"):
		return fmt.Errorf("%q contains ':' or a control character", p)
	}
	return nil
}

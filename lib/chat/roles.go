package chat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/suggest"
)

// Roles are the message roles the renderers know. A renderer given any
// other role would render it as text ("Usr:") and the model would learn
// or continue a conversation no one meant, so it is refused.
var Roles = []string{"system", "developer", "user", "assistant", "tool", "tool_declare"}

// checkRoles refuses a message whose role no renderer knows, naming the
// role meant when it is a near miss ("usr" → "user").
func checkRoles(msgs []Message) error {
	for i, m := range msgs {
		if slices.Contains(Roles, m.Role) || strings.HasPrefix(m.Role, "_") {
			continue // "_…": a renderer's own, from its tool prefix helpers
		}
		hint := ""
		if s := suggest.Nearest(m.Role, Roles); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		return fmt.Errorf("message %d has role %q%s; roles are %s", i, m.Role, hint, strings.Join(Roles, ", "))
	}
	return nil
}

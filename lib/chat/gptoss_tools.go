package chat

import (
	"fmt"
	"strings"
)

// gpt-oss declares tools in its developer message as TypeScript types in
// a "functions" namespace (OpenAI's Harmony format), converted from each
// tool's JSON Schema the way the cookbook converts them.

func (*GptOss) toolPrefix(tools []Tool, system string) ([]Message, error) {
	var msgs []Message
	if len(tools) > 0 {
		msgs = append(msgs, Message{Role: gptOssSystemRole, Content: "Calls to these tools must go to the commentary channel: 'functions'."})
	}
	var parts []string
	if system != "" {
		parts = append(parts, "# Instructions\n\n"+system)
	}
	if len(tools) > 0 {
		var defs []string
		for _, t := range tools {
			d, err := tsToolDef(t)
			if err != nil {
				return nil, err
			}
			defs = append(defs, d)
		}
		parts = append(parts, "# Tools\n\n## functions\n\nnamespace functions {\n\n"+strings.Join(defs, "\n\n")+"\n\n} // namespace functions")
	}
	if len(parts) > 0 {
		msgs = append(msgs, Message{Role: "developer", Content: strings.Join(parts, "\n\n")})
	}
	return msgs, nil
}

func tsToolDef(t Tool) (string, error) {
	schema, err := parseJSONTree(t.params())
	if err != nil {
		return "", fmt.Errorf("tool %s: parameters: %w", t.Name, err)
	}
	var lines []string
	if t.Description != "" {
		lines = append(lines, "// "+t.Description)
	}
	lines = append(lines, "type "+t.Name+" = "+tsParams(schema)+" => any;")
	return strings.Join(lines, "\n"), nil
}

func isObjectSchema(s *jsonNode) bool {
	ty := s.get("type")
	return ty != nil && ty.kind == '"' && ty.str == "object"
}

// tsParams is the parameter list: "()" or a commented "(_: { … })" block.
func tsParams(s *jsonNode) string {
	props := s.get("properties")
	if !isObjectSchema(s) || !props.truthy() {
		return "()"
	}
	head := "(_:"
	if d := s.get("description"); d.truthy() {
		head += " // " + d.text()
	}
	lines := []string{head, "{"}
	required := requiredSet(s)
	for i, name := range props.keys {
		p := props.vals[i]
		for _, c := range tsComments(p) {
			lines = append(lines, "// "+c)
		}
		line := name + optional(required, name) + ": " + tsType(p) + ","
		if def := p.get("default"); def != nil {
			line += " // default: " + def.dumps()
		}
		lines = append(lines, line)
	}
	return strings.Join(append(lines, "})"), "\n")
}

func requiredSet(s *jsonNode) map[string]bool {
	out := map[string]bool{}
	if r := s.get("required"); r != nil {
		for _, v := range r.vals {
			out[v.text()] = true
		}
	}
	return out
}

func optional(required map[string]bool, name string) string {
	if required[name] {
		return ""
	}
	return "?"
}

// tsComments are a property's title, description and examples.
func tsComments(s *jsonNode) []string {
	var out []string
	if t := s.get("title"); t.truthy() {
		out = append(out, t.text(), "")
	}
	if d := s.get("description"); d.truthy() {
		out = append(out, d.text())
	}
	if ex := s.get("examples"); ex.truthy() {
		out = append(out, "Examples:")
		for _, e := range ex.vals {
			out = append(out, "- "+e.dumps())
		}
	}
	return out
}

// tsType is one schema as a TypeScript type.
func tsType(s *jsonNode) string {
	for _, alt := range []string{"oneOf", "anyOf"} {
		if a := s.get(alt); a != nil {
			var ts []string
			for _, v := range a.vals {
				ts = append(ts, tsType(v))
			}
			return strings.Join(ts, " | ")
		}
	}
	ty := s.get("type")
	if ty != nil && ty.kind == '[' {
		var ts []string
		for _, v := range ty.vals {
			ts = append(ts, tsType(&jsonNode{kind: '{', keys: []string{"type"}, vals: []*jsonNode{v}}))
		}
		return strings.Join(ts, " | ")
	}
	base := tsBase(s, ty)
	if s.get("nullable").truthy() {
		return base + " | null"
	}
	return base
}

func tsBase(s, ty *jsonNode) string {
	name := "any"
	if ty != nil && ty.kind == '"' {
		name = ty.str
	}
	switch name {
	case "string":
		if e := s.get("enum"); e != nil {
			var vs []string
			for _, v := range e.vals {
				vs = append(vs, v.dumps())
			}
			return strings.Join(vs, " | ")
		}
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		items := s.get("items")
		if items == nil {
			items = &jsonNode{kind: '{'}
		}
		return tsType(items) + "[]"
	case "object":
		return tsObject(s)
	}
	return "any"
}

// tsObject is an inline object type "{ a: string, b?: number }".
func tsObject(s *jsonNode) string {
	if !isObjectSchema(s) {
		return "any"
	}
	props := s.get("properties")
	required := requiredSet(s)
	var parts []string
	if props != nil {
		for i, name := range props.keys {
			parts = append(parts, name+optional(required, name)+": "+tsType(props.vals[i]))
		}
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

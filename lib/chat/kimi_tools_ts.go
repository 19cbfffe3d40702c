package chat

import (
	"fmt"
	"sort"
	"strings"
)

func kimiComment(text, indent string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = indent + "// " + l
		}
	}
	return strings.Join(lines, "\n")
}

// doc is the comment lines above a field: description, then constraints.
func (t *kimiType) doc(indent string) string {
	var b strings.Builder
	if t.description != "" {
		b.WriteString(kimiComment(t.description, indent) + "\n")
	}
	if len(t.constraints) > 0 {
		var cs []string
		for _, c := range t.constraints {
			cs = append(cs, c[0]+": "+c[1])
		}
		b.WriteString(indent + "// " + strings.Join(cs, ", ") + "\n")
	}
	return b.String()
}

func (t *kimiType) ts(indent string) string {
	switch t.kind {
	case "scalar":
		if t.name == "integer" {
			return "number"
		}
		return t.name
	case "object":
		return t.objectTS(indent)
	case "array":
		item := t.items[0]
		if d := item.doc(indent + kimiIndent); d != "" {
			return "Array<\n" + d + indent + kimiIndent + item.ts(indent+kimiIndent) + "\n" + indent + ">"
		}
		return "Array<" + item.ts(indent) + ">"
	case "enum":
		var vs []string
		for _, v := range t.enum {
			if v.kind == '"' {
				vs = append(vs, `"`+v.str+`"`)
			} else {
				vs = append(vs, v.pyStr())
			}
		}
		return strings.Join(vs, " | ")
	case "anyOf":
		var vs []string
		for _, it := range t.items {
			vs = append(vs, it.ts(indent))
		}
		return strings.Join(vs, " | ")
	}
	return t.name // union, ref
}

func (t *kimiType) objectTS(indent string) string {
	var req, opt []kimiParam
	for _, p := range t.props {
		if p.optional {
			opt = append(opt, p)
		} else {
			req = append(req, p)
		}
	}
	byName := func(ps []kimiParam) {
		sort.SliceStable(ps, func(a, b int) bool { return ps[a].name < ps[b].name })
	}
	byName(req)
	byName(opt)
	var fields []string
	for _, p := range append(req, opt...) {
		fields = append(fields, p.ts(indent+kimiIndent))
	}
	switch {
	case t.additional != nil:
		fields = append(fields, indent+kimiIndent+"[k: string]: "+t.additional.ts(indent+kimiIndent))
	case t.apText != "":
		fields = append(fields, indent+kimiIndent+"[k: string]: "+t.apText)
	}
	if len(fields) == 0 {
		return "{}"
	}
	return "{\n" + strings.Join(fields, ",\n") + "\n" + indent + "}"
}

func (p kimiParam) ts(indent string) string {
	s := p.t.doc(indent)
	if p.def != nil && p.def.kind != 'z' {
		val := p.def.pyStr() // numbers and booleans: Python's repr
		if p.def.kind != '0' && p.def.kind != 'b' {
			val = p.def.dumpsUnicode()
		}
		s += indent + "// Default: " + val + "\n"
	}
	opt := ""
	if p.optional {
		opt = "?"
	}
	return s + indent + p.name + opt + ": " + p.t.ts(indent)
}

// kimiFunctionTS is one function's declaration: interfaces for $defs
// (and "parameters" when the schema refers to itself), the description,
// and the type.
func kimiFunctionTS(t Tool) (string, error) {
	params, err := parseJSONTree(t.params())
	if err != nil {
		return "", err
	}
	if !params.truthy() {
		params = &jsonNode{kind: '{'}
	}
	reg := &kimiRegistry{defs: map[string]*jsonNode{}}
	root, err := kimiObject(params, reg)
	if err != nil {
		return "", err
	}
	interfaces, err := kimiInterfaces(root, reg)
	if err != nil {
		return "", err
	}
	name := t.Name
	if name == "" {
		name = "function"
	}
	typeDef := "type " + name + " = (_: " + root.ts("") + ") => any;"
	if reg.selfRef {
		typeDef = "type " + name + " = (_: parameters) => any;"
	}
	var parts []string
	for _, p := range []string{interfaces, kimiComment(t.Description, ""), typeDef} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n"), nil
}

// kimiInterfaces declares "parameters" when the schema refers to itself,
// then each $defs entry.
func kimiInterfaces(root *kimiType, reg *kimiRegistry) (string, error) {
	var out []string
	if reg.selfRef {
		var fields []string
		for _, p := range root.props {
			fields = append(fields, p.ts(kimiIndent))
		}
		body := ""
		if len(fields) > 0 {
			body = "\n" + strings.Join(fields, ",\n") + "\n"
		}
		out = append(out, "interface parameters {"+body+"}")
	}
	for _, name := range append([]string(nil), reg.names...) {
		def := reg.defs[name]
		dt, err := parseKimiType(def, reg)
		if err != nil {
			return "", err
		}
		desc := ""
		if d := def.get("description"); d.truthy() {
			desc = kimiComment(d.pyStr(), "") + "\n"
		}
		out = append(out, desc+"interface "+name+" "+dt.ts(""))
	}
	return strings.Join(out, "\n"), nil
}

// kimiToolsTS is the tool_declare content of K2.5/K2.6.
func kimiToolsTS(tools []Tool) (string, error) {
	var fns []string
	for _, t := range tools {
		f, err := kimiFunctionTS(t)
		if err != nil {
			return "", fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fns = append(fns, f)
	}
	return "# Tools\n\n## functions\nnamespace functions {\n" + strings.Join(fns, "\n") + "\n}\n", nil
}

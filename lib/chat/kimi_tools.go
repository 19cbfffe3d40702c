package chat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/lazy"
)

// Kimi K2.5/K2.6 declare tools as TypeScript in a "functions" namespace,
// converted from each tool's JSON Schema the way the model's own
// tool_declaration_ts does (which the cookbook uses): required fields
// first, each group sorted by name; descriptions and constraints as //
// comments; $defs as interfaces, "#" as a self-referencing "parameters".

const kimiIndent = "  "

// kimiType is one schema node as TypeScript.
type kimiType struct {
	kind        string // scalar, object, array, enum, anyOf, union, ref
	name        string // scalar type, union text or ref name
	description string
	constraints [][2]string // sorted key, Python str of the value
	props       []kimiParam
	additional  *kimiType // additionalProperties as a schema
	apText      string    // additionalProperties true/false: "any"/"never"
	items       []*kimiType
	enum        []*jsonNode
}

type kimiParam struct {
	name     string
	t        *kimiType
	optional bool
	def      *jsonNode
}

type kimiRegistry struct {
	names   []string
	defs    map[string]*jsonNode
	selfRef bool
}

func (r *kimiRegistry) register(defs *jsonNode) {
	for i, k := range defs.keys {
		if _, ok := r.defs[k]; !ok {
			r.names = append(r.names, k)
		}
		r.defs[k] = defs.vals[i]
	}
}

func kimiBase(s *jsonNode, kind string, allowed ...string) *kimiType {
	t := &kimiType{kind: kind}
	if d := s.get("description"); d != nil {
		t.description = d.pyStr()
	}
	for _, k := range allowed {
		if v := s.get(k); v != nil {
			t.constraints = append(t.constraints, [2]string{k, v.pyStr()})
		}
	}
	sort.Slice(t.constraints, func(a, b int) bool { return t.constraints[a][0] < t.constraints[b][0] })
	return t
}

func parseKimiType(s *jsonNode, reg *kimiRegistry) (*kimiType, error) {
	switch {
	case s.kind == 'b' && s.str == "true":
		return &kimiType{kind: "scalar", name: "any"}, nil
	case s.kind == 'b':
		return &kimiType{kind: "scalar", name: "null"}, nil
	case s.kind != '{':
		return nil, fmt.Errorf("invalid JSON Schema %s", s.dumps())
	case s.get("$ref") != nil:
		return kimiRef(s, reg)
	case s.get("anyOf") != nil:
		t := kimiBase(s, "anyOf")
		for _, v := range s.get("anyOf").vals {
			it, err := parseKimiType(v, reg)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, it)
		}
		return t, nil
	case s.get("enum") != nil:
		t := kimiBase(s, "enum")
		t.enum = s.get("enum").vals
		return t, nil
	case s.get("type") != nil:
		return kimiTyped(s, reg)
	case len(s.keys) == 0:
		return &kimiType{kind: "scalar", name: "any"}, nil
	}
	return nil, fmt.Errorf("invalid JSON Schema object %s", s.dumps())
}

var kimiUnionNames = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{"string": "string", "number": "number", "integer": "number", "boolean": "boolean",
		"null": "null", "object": "{}", "array": "Array<any>"}
}}

func kimiTyped(s *jsonNode, reg *kimiRegistry) (*kimiType, error) {
	ty := s.get("type")
	if ty.kind == '[' {
		var names []string
		for _, v := range ty.vals {
			n, ok := kimiUnionNames.Get()[v.pyStr()]
			if !ok {
				return nil, fmt.Errorf("unknown type %s in a type list", v.dumps())
			}
			names = append(names, n)
		}
		t := kimiBase(s, "union")
		t.name = strings.Join(names, " | ")
		return t, nil
	}
	switch name := ty.pyStr(); name {
	case "object":
		return kimiObject(s, reg)
	case "array":
		t := kimiBase(s, "array", "minItems", "maxItems")
		item := &kimiType{kind: "scalar", name: "any"}
		if it := s.get("items"); it.truthy() {
			var err error
			if item, err = parseKimiType(it, reg); err != nil {
				return nil, err
			}
		}
		t.items = []*kimiType{item}
		return t, nil
	case "string":
		return kimiScalar(s, name, "maxLength", "minLength", "pattern"), nil
	case "number", "integer":
		return kimiScalar(s, name, "maximum", "minimum"), nil
	default:
		return kimiScalar(s, name), nil
	}
}

func kimiScalar(s *jsonNode, name string, allowed ...string) *kimiType {
	t := kimiBase(s, "scalar", allowed...)
	t.name = name
	return t
}

func kimiRef(s *jsonNode, reg *kimiRegistry) (*kimiType, error) {
	t := kimiBase(s, "ref")
	ref := s.get("$ref").pyStr()
	switch {
	case ref == "#":
		reg.selfRef, t.name = true, "parameters"
	case strings.HasPrefix(ref, "#/$defs/"):
		t.name = ref[strings.LastIndex(ref, "/")+1:]
		if _, ok := reg.defs[t.name]; !ok {
			return nil, fmt.Errorf("reference not found: %s", ref)
		}
	default:
		return nil, fmt.Errorf("unsupported reference format: %s", ref)
	}
	return t, nil
}

func kimiObject(s *jsonNode, reg *kimiRegistry) (*kimiType, error) {
	t := kimiBase(s, "object")
	if len(s.keys) == 0 {
		return t, nil
	}
	if defs := s.get("$defs"); defs != nil && defs.kind == '{' {
		reg.register(defs)
	}
	switch ap := s.get("additionalProperties"); {
	case ap == nil || ap.kind == 'z':
	case ap.kind == 'b':
		t.apText = map[string]string{"true": "any", "false": "never"}[ap.str]
	case ap.kind == '{':
		a, err := parseKimiType(ap, reg)
		if err != nil {
			return nil, err
		}
		t.additional = a
	default:
		return nil, fmt.Errorf("unknown additionalProperties %s", ap.dumps())
	}
	props := s.get("properties")
	if props == nil {
		return t, nil
	}
	required := requiredSet(s)
	for i, name := range props.keys {
		pt, err := parseKimiType(props.vals[i], reg)
		if err != nil {
			return nil, err
		}
		t.props = append(t.props, kimiParam{name: name, t: pt, optional: !required[name], def: props.vals[i].get("default")})
	}
	return t, nil
}

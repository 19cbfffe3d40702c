package main

import (
	"os"
	"testing"
)

// TestReadmeInSync fails when README.md's builtin reference differs from
// the docs table; run `make docs` to regenerate it.
func TestReadmeInSync(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(data) {
		t.Fatal("README.md's builtin reference is stale: run `make docs`")
	}
}

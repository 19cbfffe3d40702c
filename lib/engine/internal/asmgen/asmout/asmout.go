// Package asmout is what the engine's avo generators (../fwd, ../fwdavx2,
// ../bwd, ../attn) share: printing the functions of a build context as Go assembly
// and Go declarations, writing the files, and checking that the committed
// files are the generator's output.
package asmout

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// Print compiles ctx's functions (register allocation included) and prints
// them as assembly and as Go declarations; cfg names the generator in the
// files' header and their package.
func Print(ctx *build.Context, cfg printer.Config) (asm, decl []byte, err error) {
	f, err := ctx.Result()
	if err != nil {
		return nil, nil, err
	}
	if err := pass.Compile.Execute(f); err != nil {
		return nil, nil, err
	}
	if asm, err = printer.NewGoAsm(cfg).Print(f); err != nil {
		return nil, nil, err
	}
	decl, err = printer.NewStubs(cfg).Print(f)
	return asm, decl, err
}

// Main is the command of a generator of one assembly file and its Go
// declarations, named by -out and -stubs (defaults out and stubs).
func Main(cmd, out, stubs string, generate func() (asm, decl []byte, err error)) {
	// avo's build package registers its own flags on the default set.
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	o := fs.String("out", out, "assembly output")
	st := fs.String("stubs", stubs, "Go declarations output")
	_ = fs.Parse(os.Args[1:])
	asm, decl, err := generate()
	if err != nil {
		Fail(cmd, err)
	}
	Write(cmd, map[string][]byte{*o: asm, *st: decl})
}

// Write writes files (names relative to the working directory: go generate
// runs the generators in lib/engine) and exits the generator cmd with the
// error if one cannot be written.
func Write(cmd string, files map[string][]byte) {
	for name, b := range files {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			Fail(cmd, err)
		}
	}
}

// Fail reports err as the generator cmd's and exits 1.
func Fail(cmd string, err error) {
	fmt.Fprintf(os.Stderr, "asmgen/%s: %v\n", cmd, err)
	os.Exit(1)
}

// CheckGenerated runs generate and checks its two outputs against the
// committed files out and stubs (CheckCommitted).
func CheckGenerated(t *testing.T, out, stubs string, generate func() (asm, decl []byte, err error)) {
	t.Helper()
	asm, decl, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	CheckCommitted(t, map[string][]byte{out: asm, stubs: decl})
}

// CheckCommitted fails t for every file whose committed copy in lib/engine
// is not want[name]. It runs in a generator's directory,
// lib/engine/internal/asmgen/<cmd>.
func CheckCommitted(t *testing.T, want map[string][]byte) {
	t.Helper()
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("lib/engine/%s differs from the generator's output: run go generate in lib/engine", name)
		}
	}
}

// Weights is the element type of a forward kernel's weight matrix:
// float32, or bfloat16 bits widened exactly in registers.
type Weights struct {
	BF     bool
	Size   int    // bytes per element
	GoType string // Go pointer type of the w parameter
	Suffix string // function name suffix
}

// WeightsOf is bfloat16 weights when bf, else float32 ones.
func WeightsOf(bf bool) Weights {
	if bf {
		return Weights{BF: true, Size: 2, GoType: "*uint16", Suffix: "BF16"}
	}
	return Weights{Size: 4, GoType: "*float32", Suffix: "F32"}
}

// Kernel starts a leaf function (NOSPLIT, NOFRAME) with Go signature sig
// whose pointer arguments do not escape.
func Kernel(ctx *build.Context, name, sig string) {
	ctx.Function(name)
	ctx.Attributes(attr.NOSPLIT | attr.NOFRAME)
	ctx.SignatureExpr(sig)
	ctx.Pragma("noescape")
}

// Log2 is the base-2 logarithm of a power of two (a shift for a size).
func Log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

package shell

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// The first Ctrl-C cancels an evaluation, the second stops it hard (a
// training call then gives up its save and returns to the prompt); none
// reaches an evaluation that has ended.
func TestSecondInterruptStopsHard(t *testing.T) {
	var i interrupter
	cancels, hards := 0, 0
	i.begin(func() { cancels++ }, func() { hards++ })
	i.interrupt()
	if cancels != 1 || hards != 0 {
		t.Fatalf("first Ctrl-C: %d cancels, %d hard stops", cancels, hards)
	}
	i.interrupt()
	if cancels != 1 || hards != 1 {
		t.Fatalf("second Ctrl-C: %d cancels, %d hard stops", cancels, hards)
	}
	if !i.end() {
		t.Fatal("the evaluation was not reported interrupted")
	}
	i.interrupt()
	if cancels != 1 || hards != 1 {
		t.Fatal("a Ctrl-C between evaluations reached the ended one")
	}
}

// A script's signal handler is installed once, when its context is first
// waited on, and never after the evaluation has ended.
func TestSignalHandlerArmsOnFirstWait(t *testing.T) {
	installs, releases := 0, 0
	install := func() func() { installs++; return func() { releases++ } }
	arm, stop := lazily(install)
	ctx := armingContext{context.Background(), arm}
	if installs != 0 {
		t.Fatalf("installed %d times before anything waited", installs)
	}
	_ = ctx.Done()
	_ = ctx.Err()
	if installs != 1 {
		t.Fatalf("waiting installed the handler %d times, want 1", installs)
	}
	stop()
	arm()
	if installs != 1 || releases != 1 {
		t.Fatalf("after stop: %d installs, %d releases; want 1 and 1", installs, releases)
	}
}

// An evaluation that never waits gets its handler after armDelay, so a
// long computation can still be interrupted.
func TestSignalHandlerArmsAfterDelay(t *testing.T) {
	installed := make(chan struct{})
	_, stop := lazily(func() func() { close(installed); return func() {} })
	defer stop()
	select {
	case <-installed:
	case <-time.After(10 * time.Second): // a liveness bound, far above armDelay
		t.Fatal("the handler was never installed without a wait")
	}
}

// With the handler armed, SIGINT reaches the evaluation instead of ending
// the process.
func TestArmedHandlerTakesSIGINT(t *testing.T) {
	got := make(chan struct{}, 1)
	arm, stop := lazily(func() func() {
		return onSignal(func() { got <- struct{}{} }, os.Interrupt)
	})
	defer stop()
	_ = armingContext{context.Background(), arm}.Done()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not reach the handler")
	}
}

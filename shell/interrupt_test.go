package shell

import "testing"

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

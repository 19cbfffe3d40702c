package render

// style is one ANSI SGR attribute: the code that sets it and the one that
// ends it alone (ending bold leaves a colour set elsewhere untouched). The
// four are data, so a start pays nothing for them; these are the bytes
// fatih/color wrote, which render no longer links (its initialiser ran at
// every start).
type style struct{ on, off string }

var (
	titleStyle  = style{"\x1b[3m", "\x1b[23m"} // italic
	headerStyle = style{"\x1b[1m", "\x1b[22m"} // bold
	keyStyle    = style{"\x1b[96m", "\x1b[0m"} // bright cyan; the reset fatih/color gives a colour
	dimStyle    = style{"\x1b[2m", "\x1b[22m"} // faint, which bold's end also ends
)

// wrap returns text between s's codes.
func (s style) wrap(text string) string { return s.on + text + s.off }

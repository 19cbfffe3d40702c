// Package ops holds the operations that a subcommand and its builtin share
// (list, info, publish, delete, download, save, sample, models, billing,
// trace export, Hub push, batch sampling) together with the values they
// return and how those values look: a record, a table row and the official
// CLI's JSON. It is plain Go: builtins/ wraps these values as Starlark
// values and unpacks arguments into the options here; cmd/tinker/app turns
// flags into the same options. Errors a person acts on are
// *tinkerapi.UserError in the official CLI's words (UserErr, APIErr), so both
// callers print the same line.
package ops

package modelref

import (
	"context"
	"errors"
	"fmt"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// unavailable words a base model whose tokenizer cannot be had: off the
// network the model cannot be used here at all (the local server needs
// its weights as well), so the message says how to provide both rather
// than only which request failed.
func unavailable(base, path string, err error) error {
	if err == nil || path != "" || models.IsTiny(base) || errors.Is(err, context.Canceled) {
		return err
	}
	return &tinkerapi.UserError{Msg: fmt.Sprintf("%s is not available on this machine (%v): download it with `hf download %s` "+
		"(tinker --local then finds its weights in the Hugging Face cache) or start with --model %s=DIR; "+
		"%s and %s need no download", base, err, base, base, models.TinyLlama, models.TinyQwen3)}
}

package download

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// adapterBin is the older PyTorch form of the adapter weights, which PEFT
// loads when there is no safetensors file.
const adapterBin = "adapter_model.bin"

// verify checks that the extracted directory dir is a whole checkpoint.
// The marker alone proves little (a server may write it before the
// weights), so an adapter's files must be there too, and a safetensors
// file must be exactly as long as its header says.
func verify(dir string, adapter bool) error {
	if !isFile(filepath.Join(dir, Marker)) {
		return fmt.Errorf("%w: the archive has no %s marker", ErrIncomplete, Marker)
	}
	weights := filepath.Join(dir, peft.WeightsFile)
	hasWeights := isFile(weights)
	if adapter {
		cfg, err := os.ReadFile(filepath.Join(dir, peft.ConfigFile))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: the archive has no %s", ErrIncomplete, peft.ConfigFile)
		} else if err != nil {
			return fmt.Errorf("read %s: %w", peft.ConfigFile, err)
		}
		var obj map[string]any
		if err := json.Unmarshal(cfg, &obj); err != nil {
			return fmt.Errorf("%w: %s is not a JSON object: %v", ErrIncomplete, peft.ConfigFile, err)
		}
		if !hasWeights && !isFile(filepath.Join(dir, adapterBin)) {
			return fmt.Errorf("%w: the archive has no %s", ErrIncomplete, peft.WeightsFile)
		}
	}
	if hasWeights {
		f, err := safetensors.Open(weights)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrIncomplete, peft.WeightsFile, err)
		}
		f.Close()
	}
	return nil
}

func isFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

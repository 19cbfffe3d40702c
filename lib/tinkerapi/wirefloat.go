package tinkerapi

import (
	"bytes"
	"encoding/json"
)

// wireFloat is a float the SDK's types declare as float: encoding/json
// writes 0 and 1 as the integers 0 and 1, the SDK (pydantic) as 0.0 and
// 1.0, and a strict server may tell them apart. It keeps encoding/json's
// digits and adds ".0" to a whole number.
type wireFloat float64

func (f wireFloat) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(float64(f))
	if err != nil || bytes.ContainsAny(b, ".eE") {
		return b, err
	}
	return append(b, ".0"...), nil
}

package tinkerapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// A 404 from the service becomes the official CLI's two lines.
func ExampleCLIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/client/config":
			fmt.Fprint(w, `{}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"detail": "Training run not found"}`)
		}
	}))
	defer srv.Close()

	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: srv.URL, APIKey: "tml-example"})
	if err != nil {
		panic(err)
	}
	_, err = c.GetTrainingRun(context.Background(), "run-1:train:0", "")
	msg, details := tinkerapi.CLIError(err)
	fmt.Println("Error: " + msg)
	fmt.Println(details)
	// Output:
	// Error: Resource not found
	// Details: Error code: 404 - {'detail': 'Training run not found'}
}

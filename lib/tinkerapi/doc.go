// Package tinkerapi is a Go client for the Tinker HTTP API; docs/protocol.md
// describes the protocol. The local server (lib/server) decodes requests
// into its own types, bounded for hostile input, and reuses only a few of
// this package's (Cursor, WeightsInfo, ParsePath); what the two sides do
// share is the protobuf messages (lib/tinkerproto) and the tensor decoder
// (lib/wiretensor).
//
// Create a client from the environment and call it with a context; Ctrl-C
// handling is just cancelling that context:
//
//	c, err := tinkerapi.New(tinkerapi.ConfigFromEnv(nil))
//	if err != nil { ... }             // *ConfigError with the SDK's message
//	runs, err := c.ListTrainingRuns(ctx, 20, 0, "owned")
//	if err != nil {
//		msg, details := tinkerapi.CLIError(err) // official CLI wording
//	}
//
// What every call gets:
//   - the client/config handshake once, before the first request, and the
//     JWT exchange when the server enables it (JWTs are refreshed lazily:
//     attempted from 300 s before expiry, required when ≤ 60 s are left);
//   - retries of connection errors, timeouts, 408, 409, 429, 402 and 5xx
//     with the SDK's capped exponential backoff and jitter, honouring
//     Retry-After, retry-after-ms and x-should-retry, at most
//     Config.MaxRetries (10) and within Config.MaxRetryTime; every wait
//     goes through Config.Sleep;
//   - a per-attempt timeout (Config.RequestTimeout) covering the body, and
//     a bound on the decoded answer (gzip and deflate, asked for as the SDK
//     asks, are decoded here);
//   - one X-Idempotency-Key per call, reused by its retries (a dropped
//     connection is a counted retry after the backoff, never resent at
//     once by the transport);
//   - the SDK's X-Stainless-* headers, truthful for Go, and a User-Agent
//     naming tinker (UserAgent);
//   - no redirect following, so X-API-Key never leaves the API host;
//   - credentials scrubbed from every error message, error body and log
//     line (a server echoing the key is covered too).
//
// Errors: *APIError (HTTP status, with the SDK's message text), errors
// matching ErrTimeout / ErrConnection (*TransportError), ErrInvalidSchema
// (*SchemaError: a 2xx body missing a required field), *ConfigError,
// *CredentialError, and the context's error when cancelled.
//
// Training and sampling go through a Session (CreateSession): it
// heartbeats in the background until Close and numbers requests the way
// the server orders them. Its calls (CreateModel, SaveWeightsForSampler,
// SaveWeights, CreateSamplingSession, Sample) submit a request and wait for
// its future with Await, which implements the retrieve_future protocol
// (try_again, queue states reported through OnState, 408/410/429/5xx/402,
// protobuf or JSON results). A failed operation is a *RequestFailedError;
// an expired future is a *FutureExpiredError (errors.Is ErrFutureExpired);
// a wait on a server that stays gone ends with ErrServerGone. A wait cut
// short by its context tells a server that offers cancel_future to stop
// the work. forward_backward bodies are zstd-compressed when the server
// asks (proto_compress_fwdbwd).
//
// Adding an endpoint (sessions, futures, sampling): call Do or DoRaw with
// the path and options. Do encodes body as JSON (or sends a []byte as is,
// see WithContentType), decodes the answer into out, and applies the retry
// policy; WithoutRetries, WithTimeout, WithHeader (e.g. Accept:
// application/x-protobuf), AllowStatus, FinalStatus and WithValidator adapt
// it per call. DoRaw returns the status, headers and body for callers that
// branch on Content-Type.
package tinkerapi

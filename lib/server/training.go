package server

import "net/http"

// The training endpoints (forward, forward_backward, optim_step) belong
// here; docs/protocol.md, "Training", and docs/training.md describe them.

// notTraining answers the gradient endpoints: the local server stores and
// serves checkpoints and samples, but does not train.
func (s *Server) notTraining(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	return errorf(http.StatusBadRequest, "%s is not supported by the local server: it stores checkpoints and samples but does not train; use the Tinker service for training", seg[0])
}

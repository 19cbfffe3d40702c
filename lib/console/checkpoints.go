package console

import (
	"net/http"
	"net/url"
)

// notice is the message a run page shows after an action (?done=…);
// only these fixed texts, never text from the URL. A
// switch, not a map: a package-level map is built at every start.
func notice(done string) string {
	switch done {
	case "publish":
		return "Checkpoint published: anyone with its path can now load it."
	case "unpublish":
		return "Checkpoint unpublished: only you can load it now."
	case "delete":
		return "Checkpoint deleted."
	}
	return ""
}

// checkpointID reads the request's checkpoint as "kind/name", answering
// 404 when the path names none.
func checkpointID(w http.ResponseWriter, r *http.Request) (string, bool) {
	kind, name := r.PathValue("kind"), r.PathValue("name")
	if (kind != "weights" && kind != "sampler_weights") || name == "" {
		http.Error(w, "Not a checkpoint: want weights/NAME or sampler_weights/NAME.", http.StatusNotFound)
		return "", false
	}
	return kind + "/" + name, true
}

// checkpointAction publishes, unpublishes or deletes a checkpoint through
// the API, then shows the run page again.
func (c *Console) checkpointAction(w http.ResponseWriter, r *http.Request, s *session) {
	run := r.PathValue("run")
	id, ok := checkpointID(w, r)
	if !ok {
		return
	}
	var err error
	switch action := r.PathValue("action"); action {
	case "publish":
		err = s.client.PublishCheckpoint(r.Context(), run, id)
	case "unpublish":
		err = s.client.UnpublishCheckpoint(r.Context(), run, id)
	case "delete":
		err = s.client.DeleteCheckpoint(r.Context(), run, id)
	default:
		http.Error(w, "Unknown action: use publish, unpublish or delete.", http.StatusNotFound)
		return
	}
	if err != nil {
		c.apiFailure(w, s, err)
		return
	}
	http.Redirect(w, r, "/console/runs/"+url.PathEscape(run)+"?done="+r.PathValue("action"), http.StatusSeeOther)
}

// confirmDelete asks before a delete; the delete itself is a POST.
func (c *Console) confirmDelete(w http.ResponseWriter, r *http.Request, s *session) {
	run := r.PathValue("run")
	id, ok := checkpointID(w, r)
	if !ok {
		return
	}
	if _, err := s.client.GetTrainingRun(r.Context(), run, "owned"); err != nil {
		c.apiFailure(w, s, err)
		return
	}
	c.write(w, http.StatusOK, page{Title: "Delete " + id, Nav: "runs", CSRF: s.csrf},
		deleteView(run, id, checkpointURL(run, r.PathValue("kind"), r.PathValue("name"))+"/delete", "/console/runs/"+url.PathEscape(run), s.csrf))
}

// download sends the browser to the checkpoint archive's signed URL,
// which carries no API key.
func (c *Console) download(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := checkpointID(w, r)
	if !ok {
		return
	}
	u, err := s.client.ArchiveURL(r.Context(), r.PathValue("run"), id)
	if err != nil {
		c.apiFailure(w, s, err)
		return
	}
	http.Redirect(w, r, u.URL, http.StatusSeeOther)
}

package ab

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Handlers returns the admin listener's /ab (HTML) and /ab.json handlers.
// Both take ?effect=PERCENT, the relative difference "more intervals"
// is computed for (default 2).
func (s *Sampler) Handlers() (page, js http.Handler) {
	return http.HandlerFunc(s.servePage), http.HandlerFunc(s.serveJSON)
}

func effectParam(r *http.Request) float64 {
	if v, err := strconv.ParseFloat(r.URL.Query().Get("effect"), 64); err == nil && v > 0 && v < 1000 {
		return v / 100
	}
	return DefaultEffect
}

func (s *Sampler) serveJSON(w http.ResponseWriter, r *http.Request) {
	rep := s.Judge(effectParam(r))
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(rep)
}

func (s *Sampler) servePage(w http.ResponseWriter, r *http.Request) {
	rep := s.Judge(effectParam(r))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := renderPage(w, rep); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

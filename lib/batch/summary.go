package batch

import "sort"

// ModelSummary describes one model's rows in the output file.
type ModelSummary struct {
	Model      string
	Rows       int // rows in the file
	Missing    int // rows of the job still to sample
	MeanTokens float64
	// StopReasons counts the rows by stop reason, sorted by reason.
	StopReasons []ReasonCount
	// MeanLogprob is the mean logprob per generated token over the rows
	// that have logprobs; LogprobTokens is how many tokens it covers
	// (0: none, and MeanLogprob is 0).
	MeanLogprob   float64
	LogprobTokens int
}

// ReasonCount is how many rows stopped for one reason.
type ReasonCount struct {
	Reason string
	Count  int
}

// summarize describes the job's rows found in rows, one entry per model
// in the job's order.
func summarize(j *Job, rows map[key]rowStats, samples int) []ModelSummary {
	out := make([]ModelSummary, 0, len(j.Models))
	for _, name := range j.Models {
		s := ModelSummary{Model: name}
		tokens, sumLP := 0, 0.0
		reasons := map[string]int{}
		for _, p := range j.Prompts {
			for i := range samples {
				r, ok := rows[key{name, p.ID, i}]
				if !ok {
					s.Missing++
					continue
				}
				s.Rows++
				tokens += r.tokens
				reasons[r.stop]++
				s.LogprobTokens += r.logprobs
				sumLP += r.sumLP
			}
		}
		if s.Rows > 0 {
			s.MeanTokens = float64(tokens) / float64(s.Rows)
		}
		if s.LogprobTokens > 0 {
			s.MeanLogprob = sumLP / float64(s.LogprobTokens)
		}
		for r, n := range reasons {
			s.StopReasons = append(s.StopReasons, ReasonCount{r, n})
		}
		sort.Slice(s.StopReasons, func(a, b int) bool { return s.StopReasons[a].Reason < s.StopReasons[b].Reason })
		out = append(out, s)
	}
	return out
}

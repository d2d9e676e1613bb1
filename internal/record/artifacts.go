package record

// ArtifactSet is what one collection of a container task's attempt copied
// out of its containers (the attempt's, or one step's): the files, stored
// as a tar archive under Blob, with the manifest of what was asked and
// what was kept.
type ArtifactSet struct {
	// Step is the step of a multi-step task it was collected after, ""
	// for the attempt's own.
	Step string `json:"step,omitempty"`
	// Blob is the digest (sha256:<hex>) of the tar archive of the files,
	// each under its Path; "" when no file was kept.
	Blob      string          `json:"blob,omitempty"`
	Artifacts []ArtifactEntry `json:"artifacts"`
	Files     []ArtifactFile  `json:"files"`
}

// ArtifactEntry is one artifact the task declared (or /logs/artifacts,
// always collected) and how its collection went.
type ArtifactEntry struct {
	Source  string `json:"source"`  // its path in its service's container
	Service string `json:"service"` // "main": the task's own container
	// Path is where it is stored, relative to the set's folder; "" when
	// it was skipped.
	Path string `json:"path,omitempty"`
	// Status is ok, missing, failed or skipped.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// ArtifactFile is one file of an ArtifactSet.
type ArtifactFile struct {
	Path    string `json:"path"`   // relative to the set's folder, with / between parts
	Source  string `json:"source"` // its path in its service's container
	Service string `json:"service"`
	Size    int64  `json:"size"`
}

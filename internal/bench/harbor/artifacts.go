package harbor

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Artifact is one entry of task.toml's artifacts (or a step's): a file
// or folder copied out of a container after the agent, stored with the
// attempt, and given to a separate verifier at Source.
type Artifact struct {
	// Source is the path in the container; a relative one is relative to
	// its root, as `docker compose cp` reads it.
	Source string `json:"source"`
	// Destination, when set, is the relative path the copy is stored
	// under; else Source's own path, without its leading slash.
	Destination string `json:"destination,omitempty"`
	// Exclude are patterns of names left out of a folder (tar --exclude's).
	Exclude []string `json:"exclude,omitempty"`
	// Service is the compose service it comes from: "" or MainService
	// for the task's own container.
	Service string `json:"service,omitempty"`
}

// ServiceName is a's service, MainService when it names none.
func (a Artifact) ServiceName() string {
	if a.Service == "" {
		return MainService
	}
	return a.Service
}

// CollectHook is one [[verifier.collect]] entry: a command run in a
// service after the agent and before the artifacts are copied out, so
// that what a service holds in memory or a database is written to files.
type CollectHook struct {
	Command string        `json:"command"`
	Service string        `json:"service"` // MainService when task.toml names none
	Timeout time.Duration `json:"timeout"` // DefaultCollectTimeout when task.toml gives none
	User    string        `json:"user,omitempty"`
}

// DefaultCollectTimeout bounds a collect hook whose timeout_sec is not set.
const DefaultCollectTimeout = 60 * time.Second

// ManifestFile is the name lane writes each attempt's manifest under: no
// artifact's destination may take it.
const ManifestFile = "manifest.json"

// serviceName is what Harbor accepts as a compose service's name.
var serviceName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// ParseArtifacts reads the value of an artifacts key as the TOML library
// decodes it: a list of paths, or of tables {source, destination,
// exclude, service}. A missing key (nil) is none. Its errors name the
// entry, not the key: the caller knows where the value was.
func ParseArtifacts(v any) ([]Artifact, error) {
	var list []any
	switch l := v.(type) {
	case nil:
		return nil, nil
	case []any:
		list = l
	case []map[string]any:
		for _, m := range l {
			list = append(list, m)
		}
	default:
		return nil, fmt.Errorf("want a list of paths or of tables {source, destination, exclude, service}, not %s", tomlType(v))
	}
	out := make([]Artifact, 0, len(list))
	for i, item := range list {
		a, err := parseArtifact(item)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func parseArtifact(item any) (Artifact, error) {
	var a Artifact
	switch x := item.(type) {
	case string:
		a.Source = x
	case map[string]any:
		if err := artifactTable(x, &a); err != nil {
			return Artifact{}, err
		}
	default:
		return Artifact{}, fmt.Errorf("want a path or a table, not %s", tomlType(item))
	}
	return a, a.validate()
}

// artifactTable reads one table of artifacts into a.
func artifactTable(m map[string]any, a *Artifact) error {
	for k, v := range m {
		var err error
		switch k {
		case "source":
			a.Source, err = tomlString(k, v)
		case "destination":
			a.Destination, err = tomlString(k, v)
		case "service":
			a.Service, err = tomlString(k, v)
			a.Service = strings.TrimSpace(a.Service)
		case "exclude":
			a.Exclude, err = tomlStrings(k, v)
		default:
			err = fmt.Errorf("unknown key %q (want source, destination, exclude, service)", k)
		}
		if err != nil {
			return err
		}
	}
	if _, ok := m["source"]; !ok {
		return errors.New("source is missing")
	}
	return nil
}

// validate checks a as Harbor does: no ".." in its paths, a relative
// destination that leaves the manifest's name free, and an absolute
// source for a service other than main.
func (a Artifact) validate() error {
	if strings.TrimSpace(a.Source) == "" {
		return errors.New("source is empty")
	}
	if hasDotDot(a.Source) {
		return fmt.Errorf("source %q has a \"..\" component", a.Source)
	}
	if d := a.Destination; d != "" {
		switch {
		case strings.Contains(d, `\`):
			return fmt.Errorf("destination %q: use / between its parts", d)
		case path.IsAbs(d):
			return fmt.Errorf("destination %q is not a relative path", d)
		case hasDotDot(d):
			return fmt.Errorf("destination %q has a \"..\" component", d)
		case path.Clean(d) == "." || path.Clean(d) == ManifestFile:
			return fmt.Errorf("destination %q names no file lane can store it as (%s is the manifest's)", d, ManifestFile)
		}
	}
	if a.Service != "" && !serviceName.MatchString(a.Service) {
		return fmt.Errorf("service %q is no compose service name", a.Service)
	}
	if a.ServiceName() != MainService && !path.IsAbs(a.Source) {
		return fmt.Errorf("source %q of service %s is not an absolute path", a.Source, a.Service)
	}
	return nil
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// ParseCollectHooks reads the value of a [[verifier.collect]] key (the
// task's, or a step's) as the TOML library decodes it; nil is none.
func ParseCollectHooks(v any) ([]CollectHook, error) {
	var list []map[string]any
	switch l := v.(type) {
	case nil:
		return nil, nil
	case []map[string]any:
		list = l
	case []any:
		for _, item := range l {
			m, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("want tables {command, service, timeout_sec, user}, not %s", tomlType(item))
			}
			list = append(list, m)
		}
	default:
		return nil, fmt.Errorf("want tables {command, service, timeout_sec, user}, not %s", tomlType(v))
	}
	out := make([]CollectHook, 0, len(list))
	for i, m := range list {
		h, err := collectHook(m)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		out = append(out, h)
	}
	return out, nil
}

func collectHook(m map[string]any) (CollectHook, error) {
	h := CollectHook{Service: MainService, Timeout: DefaultCollectTimeout}
	for k, v := range m {
		var err error
		switch k {
		case "command":
			h.Command, err = tomlString(k, v)
		case "service":
			h.Service, err = tomlString(k, v)
			h.Service = strings.TrimSpace(h.Service)
			if err == nil && !serviceName.MatchString(h.Service) {
				err = fmt.Errorf("service %q is no compose service name", h.Service)
			}
		case "timeout_sec":
			var s seconds
			if err = s.UnmarshalTOML(v); err == nil {
				h.Timeout = s.duration(DefaultCollectTimeout)
			}
			if err != nil {
				err = fmt.Errorf("timeout_sec: %w", err)
			}
		case "user":
			var u user
			if err = u.UnmarshalTOML(v); err == nil {
				h.User = string(u)
			}
		default:
			err = fmt.Errorf("unknown key %q (want command, service, timeout_sec, user)", k)
		}
		if err != nil {
			return CollectHook{}, err
		}
	}
	if strings.TrimSpace(h.Command) == "" {
		return CollectHook{}, errors.New("command is missing")
	}
	return h, nil
}

func tomlString(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string, not %s", key, tomlType(v))
	}
	return s, nil
}

func tomlStrings(key string, v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a list of strings, not %s", key, tomlType(v))
	}
	out := make([]string, 0, len(l))
	for _, item := range l {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("%s: want a list of strings, not one holding %s", key, tomlType(item))
		}
		out = append(out, s)
	}
	return out, nil
}

// tomlType names the TOML type of a decoded value, for errors.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "a list"
	}
	return strconv.Quote(fmt.Sprintf("%T", v))
}

// checkServices makes sure every service the task's artifacts and collect
// hooks name is one of its compose services.
func (t *Task) checkServices() error {
	known := map[string]bool{MainService: true}
	for _, s := range t.Services {
		known[s.Name] = true
	}
	for _, a := range t.Artifacts {
		if !known[a.ServiceName()] {
			return fmt.Errorf("artifacts: %s comes from service %s, which environment/'s compose file does not define", a.Source, a.Service)
		}
	}
	for _, h := range t.Verifier.Collect {
		if !known[h.Service] {
			return fmt.Errorf("[[verifier.collect]]: %q runs in service %s, which environment/'s compose file does not define", h.Command, h.Service)
		}
	}
	return nil
}

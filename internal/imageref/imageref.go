package imageref

import (
	"errors"
	"fmt"
	"strings"
)

// Docker Hub's names: images without a domain are its, and its official
// images ("busybox") are under library/.
const (
	DockerHubDomain       = "docker.io"
	DockerHubLegacyDomain = "index.docker.io"
	officialRepoPrefix    = "library/"
	defaultTag            = "latest"
	// maxNameLength bounds a name (domain and path), as distribution's
	// NameTotalLengthMax.
	maxNameLength = 255
	maxTagLength  = 128
)

// Errors, worded as distribution/reference's.
var (
	ErrReferenceInvalidFormat = errors.New("invalid reference format")
	ErrNameContainsUppercase  = errors.New("repository name must be lowercase")
	ErrNameTooLong            = fmt.Errorf("repository name must not be more than %d characters", maxNameLength)
	ErrDigestInvalidFormat    = errors.New("invalid digest format")
)

// Reference is a parsed image reference: Domain and Path make its name
// ("docker.io", "library/busybox"), Tag and Digest are optional.
type Reference struct {
	Domain string
	Path   string
	Tag    string
	Digest string
}

// Name is the reference's repository: "docker.io/library/busybox".
func (r Reference) Name() string {
	if r.Domain == "" {
		return r.Path
	}
	return r.Domain + "/" + r.Path
}

// String is the reference as written: name[:tag][@digest].
func (r Reference) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// ParseNormalized parses s and normalizes its name as Docker does, as
// distribution/reference's ParseNormalizedNamed: without a domain the image
// is Docker Hub's, a Docker Hub image of one path component is under
// library/. Tag and digest are kept as given.
func ParseNormalized(s string) (Reference, error) {
	if isHex64(s) {
		return Reference{}, fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", s)
	}
	r, err := parse(s)
	if err != nil {
		return Reference{}, err
	}
	domain, path := splitDockerDomain(r.Path)
	if strings.ToLower(path) != path {
		return Reference{}, fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", path)
	}
	r.Domain, r.Path = domain, path
	return r, nil
}

// ParseDocker is ParseNormalized as distribution/reference's
// ParseDockerRef: a reference with a digest loses its tag, one with neither
// gets the tag "latest".
func ParseDocker(s string) (Reference, error) {
	r, err := ParseNormalized(s)
	if err != nil {
		return Reference{}, err
	}
	switch {
	case r.Digest != "":
		r.Tag = ""
	case r.Tag == "":
		r.Tag = defaultTag
	}
	return r, nil
}

// parse checks s against the reference grammar and returns its parts, the
// whole name in Path (its domain not split off).
func parse(s string) (Reference, error) {
	if s == "" {
		return Reference{}, errors.New("repository name must have at least one component")
	}
	var r Reference
	name := s
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, r.Digest = name[:i], name[i+1:]
		if !isDigest(r.Digest) {
			return Reference{}, ErrReferenceInvalidFormat
		}
		if err := checkDigest(r.Digest); err != nil {
			return Reference{}, err
		}
	}
	// A tag follows the last colon after the last slash; a colon before a
	// slash is a port's.
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, r.Tag = name[:i], name[i+1:]
		if !isTag(r.Tag) {
			return Reference{}, ErrReferenceInvalidFormat
		}
	}
	if !isName(name) {
		if name != "" && isName(strings.ToLower(name)) {
			return Reference{}, ErrNameContainsUppercase
		}
		return Reference{}, ErrReferenceInvalidFormat
	}
	if len(name) > maxNameLength {
		return Reference{}, ErrNameTooLong
	}
	r.Path = name
	return r, nil
}

// splitDockerDomain splits a name into domain and path as Docker does: the
// first component is a domain only if a path follows it and it has a dot or
// a colon, is localhost, or is not all lowercase.
func splitDockerDomain(name string) (domain, path string) {
	domain, path = DockerHubDomain, name
	if first, rest, ok := strings.Cut(name, "/"); ok &&
		(strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
		domain, path = first, rest
	}
	if domain == DockerHubLegacyDomain {
		domain = DockerHubDomain
	}
	if domain == DockerHubDomain && !strings.Contains(path, "/") {
		path = officialRepoPrefix + path
	}
	return domain, path
}

// isName: [domain "/"] path-component ("/" path-component)*.
func isName(name string) bool {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if !isPathComponent(p) && (i > 0 || len(parts) == 1 || !isDomain(p)) {
			return false
		}
	}
	return true
}

// isPathComponent: [a-z0-9]+ joined by one of ".", "_", "__" or any run of
// "-".
func isPathComponent(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s); {
		if isLowerAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isLowerAlnum(s[j]) {
			j++
		}
		switch sep := s[i:j]; {
		case sep == "." || sep == "_" || sep == "__":
		case strings.Trim(sep, "-") == "":
		default:
			return false
		}
		i = j
	}
	return true
}

// isDomain: a host (DNS labels joined by dots, or an IPv6 address in
// brackets) with an optional :port.
func isDomain(s string) bool {
	var port string
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 2 || strings.Trim(s[1:end], "0123456789abcdefABCDEF:") != "" {
			return false
		}
		port = s[end+1:]
	} else {
		host := s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i:]
		}
		for _, label := range strings.Split(host, ".") {
			if !isDomainLabel(label) {
				return false
			}
		}
	}
	if port != "" {
		digits := strings.TrimPrefix(port, ":")
		if digits == port || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return false
		}
	}
	return true
}

// isDomainLabel: letters, digits and inner hyphens.
func isDomainLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isTag: [\w][\w.-]{0,127}.
func isTag(s string) bool {
	if s == "" || len(s) > maxTagLength || !isWord(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isWord(s[i]) && s[i] != '.' && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDigest: algorithm ":" hex of at least 32 digits, the algorithm being
// [A-Za-z][A-Za-z0-9]* components joined by one of "-_+.".
func isDigest(s string) bool {
	alg, hex, ok := strings.Cut(s, ":")
	if !ok || len(hex) < 32 || strings.Trim(hex, "0123456789abcdefABCDEF") != "" {
		return false
	}
	component := false // in a component, past its leading letter
	for i := 0; i < len(alg); i++ {
		c := alg[i]
		switch {
		case component && isAlnum(c):
		case isLetter(c):
			component = true
		case component && strings.IndexByte("-_+.", c) >= 0:
			component = false
		default:
			return false
		}
	}
	return component
}

// digestLengths are the hex lengths of the digests of the algorithms
// images are addressed by (those github.com/opencontainers/go-digest
// registers).
var digestLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// checkDigest checks a digest of the grammar (isDigest) as go-digest
// validates one: a known algorithm, and as many lowercase hex digits as
// it makes.
func checkDigest(d string) error {
	alg, hex, _ := strings.Cut(d, ":")
	n, ok := digestLengths[alg]
	switch {
	case !ok:
		return fmt.Errorf("unsupported digest algorithm %q", alg)
	case len(hex) != n || strings.Trim(hex, "0123456789abcdef") != "":
		return ErrDigestInvalidFormat
	}
	return nil
}

func isHex64(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool      { return isLetter(c) || c >= '0' && c <= '9' }
func isWord(c byte) bool       { return isAlnum(c) || c == '_' }

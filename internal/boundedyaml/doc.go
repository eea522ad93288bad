// Package boundedyaml converts one YAML document to JSON, as
// sigs.k8s.io/yaml's YAMLToJSONStrict does (same library underneath, same
// result), but refuses documents whose decoding would cost far more than
// their size: the agent decodes manifests and config files it did not
// write, and a few kilobytes of YAML can otherwise ask for gigabytes.
//
// Three costs are bounded, each before the JSON is built:
//
//   - nesting: go-yaml stops at 10,000 levels but spends close to a
//     kilobyte on each, so 20 KB of '[' takes 8 MB. Limits.MaxDepth bounds
//     the nesting a line shows (brackets, chained "- " entries), counted
//     in the text.
//   - structure: go-yaml spends several hundred bytes and microseconds on
//     each node, so a document of a few megabytes of "- {}" lines takes a
//     gigabyte. Limits.MaxIndicators bounds the count of the characters
//     that start nodes (':', ',', '[', '{', and '-' or '?' that open an
//     entry), counted in the text before anything is decoded.
//   - aliases: go-yaml bounds how many nodes aliases may add, but counts a
//     scalar as one node however long it is, so one anchored string of a
//     megabyte aliased a hundred times turns into a hundred megabytes of
//     JSON. When a document has an anchor and an alias, it is decoded once
//     to measure it with its aliases expanded, and refused when that is
//     larger than Limits.MaxExpanded bytes or Limits.MaxNodes nodes,
//     before any JSON is written.
//
// The text checks look at bytes, not tokens: quoted text counts as if it
// were structure, so a document can only be refused early, never pass a
// check it should fail.
//
// Data enters as the bytes of one document and leaves as JSON bytes or an
// error; the package holds no state and is safe for concurrent use.
package boundedyaml

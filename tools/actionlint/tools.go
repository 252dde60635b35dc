//go:build tools

// The command scripts/actionlint.sh builds; this file keeps it (and its dependencies) in go.mod
// and go.sum.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"

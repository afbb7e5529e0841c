// Package plan is the vocabulary of a compiled scenario: the Plan the
// language (package dsl) compiles a file into and the runner walks, and
// the names every other package shares (stores, operations, error
// classes, fault kinds, metrics, units). It knows nothing of HCL, so the
// stores, metrics and results depend on it rather than on the parser.
package plan

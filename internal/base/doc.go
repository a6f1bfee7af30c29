// Package base holds what the engine's packages share and users must not
// see: the internal key encoding (user key + 8-byte trailer), its ordering,
// and the sentinel errors that the public db package re-exports.
//
// An internal key is the user key followed by an 8-byte little-endian
// trailer seq<<8 | kind. Internal keys sort by user key ascending (bytewise),
// then by trailer descending, so for one user key the newest version comes
// first.
package base

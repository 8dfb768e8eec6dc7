package main

import (
	"runtime"

	"github.com/ncruces/go-sqlite3"
)

// environment describes where a batch ran, for its report.
func environment() map[string]string {
	return map[string]string{"go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH, "sqlite": sqliteVersion()}
}

// sqliteVersion is the linked SQLite's version, for reports.
func sqliteVersion() string {
	conn, err := sqlite3.Open(":memory:")
	if err != nil {
		return "unknown"
	}
	defer conn.Close()
	stmt, _, err := conn.Prepare("SELECT sqlite_version()")
	if err != nil {
		return "unknown"
	}
	defer stmt.Close()
	if !stmt.Step() {
		return "unknown"
	}
	return stmt.ColumnText(0)
}

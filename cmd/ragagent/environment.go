package main

import "github.com/ncruces/go-sqlite3"

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

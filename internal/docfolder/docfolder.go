// Package docfolder reads a folder of documents for the corpus builder:
// every regular file of a kind it reads (core/builder.KindOf), with its
// path relative to the folder, hidden folders and other files not read at
// all, and a file over builder.MaxDocumentBytes handed on unread (the
// builder skips it with its reason).
package docfolder

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragagentlab/ragagent/core/builder"
)

// Read reads every regular file under dir (only under the include
// subfolders when given) whose extension the builder reads, with its path
// relative to dir. Files of other kinds are not read at all.
func Read(dir string, include, exclude []string) ([]builder.Document, error) {
	var docs []builder.Document
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || excluded(rel, exclude)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || builder.KindOf(rel) == builder.Unreadable || !under(rel, include) || excluded(rel, exclude) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > builder.MaxDocumentBytes {
			docs = append(docs, builder.Document{Path: rel, Data: make([]byte, builder.MaxDocumentBytes+1)})
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		docs = append(docs, builder.Document{Path: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s has no .html, .md, .rst, .txt or .jsonl file%s", dir, map[bool]string{true: " under " + strings.Join(include, ", ")}[len(include) > 0])
	}
	return docs, nil
}

// excluded reports whether rel is one of the exclude paths or under one.
func excluded(rel string, exclude []string) bool {
	for _, ex := range exclude {
		if rel == ex || strings.HasPrefix(rel, ex+"/") {
			return true
		}
	}
	return false
}

func under(rel string, include []string) bool {
	if len(include) == 0 {
		return true
	}
	for _, in := range include {
		if strings.HasPrefix(rel, in+"/") {
			return true
		}
	}
	return false
}

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/workqueue/work"
)

// printJSON writes v as indented JSON, without HTML escaping.
func printJSON(w io.Writer, v interface{}) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// compactJSON renders v on one line, without HTML escaping.
func compactJSON(v interface{}) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		// A tab or newline in job data would break the columns.
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// short cuts s to n runes.
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// when renders an epoch time in UTC, "-" for 0.
func when(epoch int64) string {
	if epoch == 0 {
		return "-"
	}
	return time.Unix(epoch, 0).UTC().Format("2006-01-02 15:04:05")
}

// ago renders an epoch time relative to now.
func ago(epoch int64) string {
	if epoch == 0 {
		return "never"
	}
	d := time.Now().Unix() - epoch
	if d < 0 {
		return "in " + seconds(-d)
	}
	return seconds(d) + " ago"
}

// seconds renders a duration in seconds briefly: "45s", "3m20s", "2h5m", "3d4h".
func seconds(s int64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return trimZero(fmt.Sprintf("%dm%ds", s/60, s%60))
	case s < 86400:
		return trimZero(fmt.Sprintf("%dh%dm", s/3600, s%3600/60))
	}
	return trimZero(fmt.Sprintf("%dd%dh", s/86400, s%86400/3600))
}

// trimZero drops a zero second unit: "1h0m" reads "1h".
func trimZero(s string) string {
	for _, z := range []string{"0s", "0m", "0h"} {
		if strings.HasSuffix(s, z) && len(s) > len(z) && (s[len(s)-len(z)-1] < '0' || s[len(s)-len(z)-1] > '9') {
			return strings.TrimSuffix(s, z)
		}
	}
	return s
}

// argsOf renders a job's args, or its raw bytes when it could not be decoded.
func argsOf(j *work.Job) string {
	if len(j.Raw) > 0 {
		text, isBase64 := rawText(j.Raw)
		if isBase64 {
			return "(undecodable, base64) " + text
		}
		return "(undecodable) " + text
	}
	return compactJSON(j.Args)
}

// rawText shows payload bytes as dead records keep them: as text when they are valid UTF-8, else in
// base64, which isBase64 reports so that the caller labels it.
func rawText(b []byte) (text string, isBase64 bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// orDash renders "" as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// plural picks the word for n things.
// pageSize is the length of the Client's pages (jobs of a set, batches, keys).
const pageSize = 20

// pageFooter prints the line under a page of a listing: "page 2 of 5, 97 jobs". page 0 is page 1.
func pageFooter(w io.Writer, page uint, total int64, one, many string) {
	fmt.Fprintf(w, "page %d of %d, %d %s\n", max(page, 1), (total+pageSize-1)/pageSize, total, plural(total, one, many))
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

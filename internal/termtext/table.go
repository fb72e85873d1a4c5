package termtext

import (
	"bytes"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// Table aligns tab-separated text in columns the way text/tabwriter does
// with NewWriter(w, 0, 4, 2, ' ', 0) — the cells of a line end at a tab,
// the text after a line's last tab is not aligned, a column is aligned
// over the consecutive lines that have it (a column block), and a line
// without a tab ends every block — but measures a cell by the columns it
// takes on a terminal (go-runewidth: East Asian wide characters, such as
// those of 运动鞋, take two; go-runewidth is the terminal-width library of
// the progress bar's stack, already linked), where tabwriter counts runes and so shifts
// every column after a wide cell. The text should already be Escape'd: a
// control character's width is taken as zero.
//
// Write buffers; Flush writes what is buffered (a last line without a
// newline as it is). Errors are w's.
type Table struct {
	w     io.Writer
	width *runewidth.Condition // a Table's own: its tables fill lazily
	lines [][]string           // complete lines buffered, as cells
	part  []byte               // the line under way
	out   bytes.Buffer
}

// NewTable returns a Table that writes to w.
// A character of ambiguous width (—, ±) takes one column, as on
// terminals outside East Asian locales, whatever the locale: the output
// does not depend on the environment.
func NewTable(w io.Writer) *Table {
	return &Table{w: w, width: &runewidth.Condition{StrictEmojiNeutral: true}}
}

// tablePadding is the space after the widest cell of a column.
const tablePadding = 2

// Write buffers p; each line without a tab ends the column blocks before
// it, which are then written to w.
func (t *Table) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.part = append(t.part, p...)
			break
		}
		t.part = append(t.part, p[:i]...)
		p = p[i+1:]
		cells := strings.Split(string(t.part), "\t")
		t.part = t.part[:0]
		t.lines = append(t.lines, cells)
		if len(cells) == 1 {
			if err := t.flushLines(true); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// Flush writes every buffered line, the line under way last, without a
// newline.
func (t *Table) Flush() error {
	partial := len(t.part) > 0
	if partial {
		t.lines = append(t.lines, strings.Split(string(t.part), "\t"))
		t.part = t.part[:0]
	}
	if err := t.flushLines(!partial); err != nil {
		return err
	}
	return nil
}

// flushLines formats the buffered lines and writes them; lastNewline says
// whether the last one ends with a newline.
func (t *Table) flushLines(lastNewline bool) error {
	t.out.Reset()
	t.format(nil, 0, len(t.lines))
	if !lastNewline && t.out.Len() > 0 {
		t.out.Truncate(t.out.Len() - 1)
	}
	t.lines = t.lines[:0]
	_, err := t.w.Write(t.out.Bytes())
	return err
}

// format writes lines [line0, line1) with the column widths of the blocks
// they are in: widths holds the widths of the columns left of the one
// being measured (tabwriter's algorithm).
func (t *Table) format(widths []int, line0, line1 int) {
	column := len(widths)
	for this := line0; this < line1; this++ {
		if column >= len(t.lines[this])-1 {
			continue
		}
		// A cell in this column: a block begins here.
		t.writeLines(widths, line0, this)
		line0 = this
		width := 0
		for ; this < line1; this++ {
			line := t.lines[this]
			if column >= len(line)-1 {
				break
			}
			if w := t.width.StringWidth(line[column]) + tablePadding; w > width {
				width = w
			}
		}
		t.format(append(widths, width), line0, this)
		line0 = this
	}
	t.writeLines(widths, line0, line1)
}

// writeLines writes lines [line0, line1), each cell left of len(widths)
// padded to its column's width.
func (t *Table) writeLines(widths []int, line0, line1 int) {
	for _, line := range t.lines[line0:line1] {
		for j, c := range line {
			t.out.WriteString(c)
			if j < len(widths) && j < len(line)-1 {
				t.out.WriteString(strings.Repeat(" ", max(widths[j]-t.width.StringWidth(c), 0)))
			}
		}
		t.out.WriteByte('\n')
	}
}

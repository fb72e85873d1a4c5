package returns

import (
	"fmt"
	"strings"
)

// This file holds what a message for a person is made of besides its
// words: the inputs it names and the hint of what to do next. Both are
// data, so that each front end words them its own way (Wording): the
// command line as flags and a command to paste, a server as its form's
// fields and a link.

// Input names an input of an operation, as the person gives it: a field of
// its options ("action", "reason", "draft-ttl"). A message or a hint names
// an input with an Input, never with a front end's syntax for it; String
// is the domain's name.
type Input string

// String is the input's name in the domain's words.
func (i Input) String() string { return string(i) }

func (i Input) words(w Wording) string { return w.Input(i) }

// worded is an argument of a message that each front end words its own
// way: an Input, a phrase.
type worded interface{ words(w Wording) string }

// phrase is fmt.Sprintf(format, args...) as an argument of a message,
// its Inputs worded by the front end: what an answer gave, say (the reason
// input and its value).
type phrase struct {
	format string
	args   []any
}

func phrasef(format string, args ...any) phrase { return phrase{format, args} }

// String is the phrase in the domain's words (PlainWords).
func (p phrase) String() string { return p.words(PlainWords) }

func (p phrase) words(w Wording) string { return fmt.Sprintf(p.format, wordArgs(p.args, w)...) }

// Inputs that messages and hints name.
const (
	InputAction         Input = "action"
	InputReason         Input = "reason"
	InputComment        Input = "comment"
	InputDraft          Input = "draft"
	InputVersion        Input = "version"
	InputInterrupt      Input = "interrupt"
	InputApprovals      Input = "approvals"
	InputDraftTTL       Input = "draft-ttl"
	InputStatus         Input = "status"
	InputLimit          Input = "limit"
	InputAwaitingMe     Input = "awaiting-me"
	InputBatch          Input = "batch"
	InputRows           Input = "rows"
	InputFor            Input = "for"
	InputUser           Input = "user"
	InputID             Input = "id"
	InputFinishedBefore Input = "finished-before"
	InputKeep           Input = "keep"
	InputWait           Input = "wait"
	InputOutput         Input = "output"
	InputAllowOverlap   Input = "allow-overlap"
	InputOperator       Input = "operator"
	InputTimezone       Input = "timezone"
	InputDateFormat     Input = "date-format"
	InputColumn         Input = "column"
	InputDefault        Input = "default"
)

// Do names an operation a hint offers. A front end turns it into its own
// way of doing it: a command to paste, a link, a button.
type Do string

// The operations a hint offers.
const (
	DoShow    Do = "show"    // see the task (Service.Show)
	DoResume  Do = "resume"  // continue the task's run, or give the answer of Hint.With
	DoAnswer  Do = "answer"  // answer the task's pending question, of the kind Hint.Ask
	DoHistory Do = "history" // see the task's stored checkpoints and steps
	DoList    Do = "list"    // list the person's tasks
	DoStop    Do = "stop"    // stop the task's run
	DoWait    Do = "wait"    // wait for the task's outcome
	DoRecover Do = "recover" // continue every run whose process is gone
	DoVerify  Do = "verify"  // check the stores
	DoBackup  Do = "backup"  // copy the data dir (Hint.Args: where to)
)

// Hint is what a person can do next, kept apart from the message that
// says what happened. It reads Before, the operation Do (for Task, with
// Args and With), After, then Then: "wait for it, then see where the task
// went with" [show T] ", and answer its next question if it asks one". A
// hint with no Do is words alone (Before), or, with With, the same
// operation again with those inputs ("run it with" [user alice]).
type Hint struct {
	// Before and After are the words around the operation, in the
	// domain's terms; either may be "".
	Before string
	// Do is the operation offered; "" for none.
	Do Do
	// Task is the task (batch, decide run) Do is for; "" for none.
	Task string
	// Ask is, for DoAnswer, the kind of the question: KindNeedReason or
	// KindApproval.
	Ask string
	// Args are Do's further arguments, after Task (backup's directory).
	Args []string
	// With are the inputs given with Do, in order.
	With  []InputValue
	After string
	// Then is a further step, worded after this one; nil for none.
	Then *Hint
}

// InputValue is an input and the value a hint gives it. A value in
// capitals (NEW, DIR) names one the person chooses; "" names the input
// alone ("give it without" the interrupt).
type InputValue struct {
	Input Input
	Value string
}

// IsZero reports whether h offers nothing.
func (h Hint) IsZero() bool {
	return h.Before == "" && h.Do == "" && len(h.With) == 0 && h.After == "" && h.Then == nil
}

// Wording is how a front end words an input's name and a hint: the
// command line as its flag and a command to paste. PlainWords is this
// package's own.
type Wording interface {
	Input(Input) string
	Hint(Hint) string
}

// PlainWords words inputs by their names and a hint in plain words: the
// operation, its task, arguments and inputs ("show r1", "resume r1 with
// action approve"). It is the wording of a Service whose Config names
// none.
var PlainWords Wording = plainWords{}

type plainWords struct{}

func (plainWords) Input(i Input) string { return string(i) }

func (plainWords) Hint(h Hint) string {
	var op []string
	if h.Do != "" {
		op = append(op, string(h.Do))
	}
	if h.Task != "" {
		op = append(op, h.Task)
	}
	op = append(op, h.Args...)
	if h.Ask != "" {
		op = append(op, "("+h.Ask+")")
	}
	for i, in := range h.With {
		word := " "
		if i == 0 && h.Do != "" {
			word = " with "
		}
		op = append(op, strings.TrimSpace(word+strings.TrimSpace(string(in.Input)+" "+in.Value)))
	}
	return JoinWords(h, strings.Join(op, " "), PlainWords)
}

// JoinWords is hint h worded with op, the front end's words for its
// operation (the part of h from Do to With): Before, op and After, each
// two joined by a space unless the second starts with a punctuation
// mark, then h.Then worded by w.
func JoinWords(h Hint, op string, w Wording) string {
	s := join(join(h.Before, op), h.After)
	if h.Then != nil {
		s = join(s, w.Hint(*h.Then))
	}
	return s
}

// join is a and b with a space between, unless either is "", a ends with
// "(" or b starts with a punctuation mark.
func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case strings.HasSuffix(a, "(") || strings.ContainsAny(b[:1], ",;:.)"):
		return a + b
	}
	return a + " " + b
}

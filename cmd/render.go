package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// nextCommandPrefix is the program's name (app.prog) plus the global
// flags that differ from their defaults, so a printed next command can be
// pasted as it is; the program alone once a flag was refused
// (flagsRefused).
func (a *app) nextCommandPrefix() string {
	prog := a.prog
	if prog == "" {
		prog = DefaultProgram
	}
	if a.flagsRefused {
		return prog
	}
	parts := []string{prog}
	switch {
	case a.onServer() && a.storeFromFlag:
		// Without its password: pgx reads it from PGPASSWORD or ~/.pgpass.
		parts = append(parts, "--store", shellQuote(redactURL(a.store)))
	case a.onServer():
		// ASSISTANT_STORE names it in the environment the command is
		// pasted into.
	case a.data != DefaultDataDir:
		parts = append(parts, "--data", shellQuote(a.data))
	}
	if a.user != DefaultUser {
		parts = append(parts, "--user", shellQuote(a.user))
	}
	return strings.Join(parts, " ")
}

// writeCard prints a view for viewer, the person who reads it (--user):
// the order, the state, the question with its draft, and the exact next
// commands to type that viewer may run (prog is the command prefix to
// paste).
func writeCard(w io.Writer, v *returns.View, prog, viewer string) error {
	var b strings.Builder
	cardHeader(&b, v)
	task := shellQuote(v.Task)
	if v.DraftExpired() || v.ExpiredNow() {
		cardExpired(&b, v, prog, viewer == v.User)
	} else {
		first := true
		for _, in := range v.Interrupts {
			cardQuestion(&b, in, prog, task, cardAsk{first: first, noApprove: v.NoApprove, stands: v.Stands, standsCmd: standsCommand(v), notReturnable: notReturnable(v)})
			first = first && in.Kind != returns.KindApproval
		}
	}
	cardOutcome(&b, v)
	cardRun(&b, v, prog, task, viewer == v.User)
	_, err := io.WriteString(w, b.String())
	return err
}

// cardHeader writes the task, its status and stage, a batch's progress and
// the draft.
func cardHeader(b *strings.Builder, v *returns.View) {
	if v.Batch != nil {
		// As show --rows titles it (writeRowsText).
		what := "Batch"
		if v.Batch.Of == returns.RowsOfDecisions {
			what = "Decide run"
		}
		fmt.Fprintf(b, "%s %s · user %s\n", what, termSafe(v.Task), termSafe(v.User))
	} else {
		fmt.Fprintf(b, "Task %s · order %s · user %s\n", termSafe(v.Task), termSafe(v.Order), termSafe(v.User))
	}
	fmt.Fprintf(b, "Status: %s · stage: %s\n", v.Status, orDash(v.Stage))
	if v.Batch != nil {
		b.WriteString(writeBatch(v.Batch))
	}
	if v.Draft != nil {
		fmt.Fprintf(b, "Draft %s (version %d): reason %q, expires %s (%s)\n", termSafe(v.Draft.DraftID), max(v.Draft.Version, 1), v.Draft.Reason, v.Draft.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"), draftWhen(v))
	}
	cardDecisions(b, v.Decisions)
	cardAwaitingSubmit(b, v)
}

// cardAwaitingSubmit writes the approvals v's head carries to a submit
// that has not finished (View.AwaitingSubmit): recorded, nothing
// submitted yet, and what carries the submit on (cardRun gives the
// command), or why the submit would no longer count one.
func cardAwaitingSubmit(b *strings.Builder, v *returns.View) {
	goesOn := "recover continues it"
	switch {
	case v.Holder != nil && v.Holder.Alive && v.Status == returns.StatusRunning:
		goesOn = "its process is carrying it out"
	case v.Holder != nil && v.Holder.Alive:
		goesOn = "a resume continues it once its process lets go"
	case v.Status == returns.StatusInterrupted:
		goesOn = "a resume continues it"
	}
	for _, d := range v.AwaitingSubmit {
		bound := ""
		if d.Version != nil {
			bound = fmt.Sprintf(" (version %d)", *d.Version)
		}
		fmt.Fprintf(b, "Recorded: %s approve by %s%s; its submit has not finished, nothing is submitted yet", d.At.UTC().Format("2006-01-02 15:04:05 UTC"), termSafe(d.By), bound)
		if d.NotCounted != "" {
			fmt.Fprintf(b, "; it no longer counts (%s): the submit will not carry it out, and the task waits for another approval\n", termSafe(d.NotCounted))
			continue
		}
		fmt.Fprintf(b, "; %s\n", goesOn)
	}
}

// draftWhen is what the card says of the expiry of v's draft: expired, a
// countdown only while an approval can still submit it, or why it no
// longer expires (the task ended, its application was made, the order may
// not be returned now).
func draftWhen(v *returns.View) string {
	left := time.Until(v.Draft.ExpiresAt).Round(time.Second)
	switch {
	case v.Draft.Expired:
		return "expired"
	case endedStatus(v.Status):
		return "no longer expires: the task ended " + v.Status
	case v.Result != nil:
		return "no longer expires: it was submitted"
	case v.Draft.NotReturnable != nil:
		return "no longer matters: the order cannot be returned now, " + termSafe(*v.Draft.NotReturnable)
	case left <= 0:
		return "expired"
	}
	return "in " + left.String()
}

// endedStatus reports whether status is one a run ends with.
func endedStatus(status string) bool {
	return status == returns.StatusDone || status == returns.StatusCancelled || status == returns.StatusFailed
}

// notReturnable is the reason code v's order may not be returned now
// (draft.not_returnable), "" when it may.
func notReturnable(v *returns.View) string {
	if v.Draft == nil || v.Draft.NotReturnable == nil {
		return ""
	}
	return *v.Draft.NotReturnable
}

// cardDecisions writes the decision trail, one answer a line.
func cardDecisions(b *strings.Builder, ds []returns.DecisionView) {
	for i, d := range ds {
		label := "Decided:"
		if i > 0 {
			label = "        "
		}
		bound := ""
		if d.Version != nil {
			bound = fmt.Sprintf(" (version %d)", *d.Version)
		}
		detail := ""
		switch {
		case d.Comment != "":
			detail = fmt.Sprintf(": %q", d.Comment)
		case d.Reason != "":
			detail = fmt.Sprintf(": %q", d.Reason)
		}
		if d.NotCounted != "" {
			detail += fmt.Sprintf(" (not counted: %s)", termSafe(d.NotCounted))
		}
		fmt.Fprintf(b, "%s %s %s by %s%s%s\n", label, d.At.UTC().Format("2006-01-02 15:04:05 UTC"), termSafe(d.Action), termSafe(d.By), bound, detail)
	}
}

// cardAsk is what a question's lines depend on besides the question: first
// is set for the first approval question of the card (the commands that
// answer every approval question at once go under it), and noApprove is
// why the viewer's approve could not be carried out now (View.NoApprove:
// they approved the draft already, they requested a task that needs two
// other approvers; "" when it could), so that the card offers them no
// approve.
// stands is the answer the decision trail holds for the question (its
// checkpoint lost): only it carries the task on, so it is the one command
// offered.
//
// notReturnable is the reason code the order may not be returned now
// ("" when it may): an approve would submit nothing, so only a cancel is
// offered.
type cardAsk struct {
	first         bool
	noApprove     string
	stands        *returns.DecisionView
	standsCmd     string
	notReturnable string
}

// standsCommand is the command that carries out v's standing answer,
// without its program name; "" when none stands.
func standsCommand(v *returns.View) string {
	if v.Stands == nil {
		return ""
	}
	return strings.TrimPrefix(cliWords.commandLine(returns.StandingHint(v.Task, *v.Stands)), "assistant ")
}

// cardStands writes the question in and the one command, cmd (without its
// program name), that carries on a task whose answer action the decision
// trail holds (its checkpoint lost): that answer given again, word for
// word.
func cardStands(b *strings.Builder, in returns.InterruptView, prompt, effect, prog, cmd, action string) {
	if in.Kind == returns.KindApproval {
		fmt.Fprintf(b, "Question: approve this return request? %s\n", termSafe(effect))
	} else {
		fmt.Fprintf(b, "Question: %s\n", termSafe(prompt))
	}
	// "The decision trail", not a file's name: on --store the trail is
	// in the schema business, not in business.sqlite.
	fmt.Fprintf(b, "Next:     %s %s   (the %s the decision trail holds stands: its checkpoint was lost; only it carries the task on)\n", prog, termSafe(cmd), termSafe(action))
}

// cardQuestion writes a pending question and the commands that answer it.
func cardQuestion(b *strings.Builder, in returns.InterruptView, prog, task string, ask cardAsk) {
	var q struct {
		Prompt      string `json:"prompt"`
		Effect      string `json:"effect"`
		Problem     string `json:"problem"`
		DraftID     string `json:"draft_id"`
		Comment     string `json:"comment"`
		RequestedBy string `json:"requested_by"`
		Approver    int    `json:"approver"`
		Approvals   int    `json:"approvals"`
	}
	_ = json.Unmarshal(in.Value, &q)
	if q.Problem != "" {
		fmt.Fprintf(b, "Previous answer refused: %s\n", termSafe(q.Problem))
	}
	if ask.stands != nil {
		if ask.first {
			cardStands(b, in, q.Prompt, q.Effect, prog, ask.standsCmd, ask.stands.Action)
		}
		return
	}
	switch in.Kind {
	case returns.KindNeedReason:
		if q.Comment != "" {
			fmt.Fprintf(b, "Changes requested by %s: %q\n", orDash(termSafe(q.RequestedBy)), q.Comment)
		}
		fmt.Fprintf(b, "Question: %s\n", termSafe(q.Prompt))
		fmt.Fprintf(b, "Next:     %s resume %s --reason <reason>\n", prog, task)
	case returns.KindApproval:
		interrupt := ""
		if q.Approvals > 1 {
			fmt.Fprintf(b, "Approval %d of %d (interrupt %s); two different people must approve\n", q.Approver, q.Approvals, termSafe(in.ID))
			interrupt = " --interrupt " + shellQuote(in.ID)
		}
		fmt.Fprintf(b, "Question: approve this return request? %s\n", termSafe(q.Effect))
		if ask.notReturnable != "" {
			// Submit checks the order again and would end the request
			// failed: no approve, edit or revise can submit it now.
			if ask.first {
				fmt.Fprintf(b, "Next:     %s resume %s --action cancel   (the order cannot be returned now: %s)\n", prog, task, termSafe(ask.notReturnable))
			}
			return
		}
		if ask.noApprove != "" {
			// The viewer's approve would be refused, or not counted.
			fmt.Fprintf(b, "Next:     another approver gives this approval (yours cannot count: %s)\n", termSafe(ask.noApprove))
		} else {
			fmt.Fprintf(b, "Next:     %s resume %s --action approve --draft %s%s\n", prog, task, shellQuote(q.DraftID), interrupt)
		}
		if ask.first {
			fmt.Fprintf(b, "   or:    %s resume %s --action cancel\n", prog, task)
			fmt.Fprintf(b, "   or:    %s resume %s --action edit --reason <reason>   (a new draft version)\n", prog, task)
			fmt.Fprintf(b, "   or:    %s resume %s --action revise --comment <comment>   (back to the owner)\n", prog, task)
		}
	}
}

// cardExpired writes, for a task still waiting for approval of a draft
// that has expired, that no answer can submit it, and the commands that
// go on: a new request under a task id of the person's choosing (task ids
// are never reused), or recover, which ends this one failed
// (draft_expired). A new request is offered to the owner only (owner):
// the order is theirs, so an approver's start would be refused; an
// approver is told the owner may start one.
func cardExpired(b *strings.Builder, v *returns.View, prog string, owner bool) {
	fmt.Fprintf(b, "The draft expired before it was approved: approving it can no longer submit anything.\n")
	if !owner {
		fmt.Fprintf(b, "Next:     %s recover   (ends this task failed: draft_expired; only its owner %s can start a new request for order %s)\n", prog, termSafe(v.User), termSafe(v.Order))
		return
	}
	reason := ""
	if v.Draft.Reason != "" {
		reason = " --reason " + shellQuote(v.Draft.Reason)
	}
	fmt.Fprintf(b, "Next:     %s start %s %s%s   (a new request: replace %s with a task id not used yet)\n", prog, NewTaskPlaceholder, shellQuote(v.Order), reason, NewTaskPlaceholder)
	fmt.Fprintf(b, "   or:    %s recover   (ends this task failed: draft_expired)\n", prog)
}

// NewTaskPlaceholder stands for a task id in the command the card of an
// expired draft suggests. The card cannot know a free id (any id it made
// up, such as TASK-2, may be taken, and a pasted start of a taken id is a
// conflict), so the person names one.
const NewTaskPlaceholder = "NEW-TASK"

// cardOutcome writes the submitted application or the error a request
// ended with.
func cardOutcome(b *strings.Builder, v *returns.View) {
	if v.Result != nil {
		reused := ""
		if v.Result.Reused {
			reused = " (already submitted before; no second application)"
		}
		fmt.Fprintf(b, "Submitted: application %s, review %s%s\n", termSafe(v.Result.ApplicationID), termSafe(v.Result.ReviewStatus), reused)
	}
	if v.Error != nil {
		fmt.Fprintf(b, "Error: %s — %s\n", termSafe(v.Error.Code), termtext.EscapeControls(returns.Line(v.Error.Message, v.Error.Hint)))
	}
}

// cardRun writes what a stopped, running or abandoned run needs next;
// owner is set when the viewer owns the task (only the owner may stop it).
func cardRun(b *strings.Builder, v *returns.View, prog, task string, owner bool) {
	// next names the nodes due, when the run has a checkpoint to say so.
	next := ""
	if len(v.Next) > 0 {
		next = " (next: " + strings.Join(v.Next, ", ") + ")"
	}
	switch {
	case v.Status == returns.StatusInterrupted && v.Holder != nil && v.Holder.Alive:
		// The process that ran it has not let go yet: a resume now is
		// refused, and so is another stop.
		fmt.Fprintf(b, "Stopped (by `assistant stop` or a signal)%s, but its process (pid %d on %s) still holds it until it lets go of it (lease until %s).\n", next, v.Holder.PID, termSafe(v.Holder.Host), v.Holder.Until.UTC().Format(time.RFC3339))
		fmt.Fprintf(b, "Then continue it: %s resume %s\n", prog, task)
	case v.Status == returns.StatusInterrupted:
		fmt.Fprintf(b, "Stopped (by `assistant stop` or a signal)%s. Continue it: %s resume %s\n", next, prog, task)
	case v.Status == returns.StatusRunning && v.Holder != nil && v.Holder.Alive && owner:
		fmt.Fprintf(b, "Running in pid %d on %s. Stop it: %s stop %s\n", v.Holder.PID, termSafe(v.Holder.Host), prog, task)
	case v.Status == returns.StatusRunning && v.Holder != nil && v.Holder.Alive:
		fmt.Fprintf(b, "Running in pid %d on %s. Wait for it to finish: %s show %s\n", v.Holder.PID, termSafe(v.Holder.Host), prog, task)
	case v.Status == returns.StatusRunning:
		if v.Holder != nil && v.Holder.PID != 0 {
			fmt.Fprintf(b, "Its process (pid %d on %s) is gone; the run stopped part-way%s.\n", v.Holder.PID, termSafe(v.Holder.Host), next)
		} else {
			fmt.Fprintf(b, "The run stopped part-way%s.\n", next)
		}
		fmt.Fprintf(b, "Recover:  %s recover   (or: %s resume %s)\n", prog, prog, task)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package business

// This file holds what a refused orders file needs of the import's
// options: the stores say what they found in the file, and name the
// options that would read it (Need); a front end words each as its own
// input (a flag, a form field) in the refusal's hint.

// Need is an option of an orders import that a refused file needs, in
// the domain's words (docs/orders.md "Problems"): ImportError.Needs,
// HeaderError.Needs, OwnerError.Needs.
type Need string

// The options an orders file may need.
const (
	// NeedOperator: rows of users other than the importing one, or a
	// change to the shop's order, which only the shop's operator
	// imports (ParseOptions.Operator).
	NeedOperator Need = "operator"
	// NeedTimezone: delivery times without a time zone, which a named
	// zone reads (ParseOptions.Location).
	NeedTimezone Need = "timezone"
	// NeedDateFormat: delivery times in a format of their own
	// (ExportMapping's date format).
	NeedDateFormat Need = "date-format"
	// NeedMapping: fields the header does not name: a column named as
	// the field, or a value every row gets (ExportMapping's columns and
	// defaults).
	NeedMapping Need = "mapping"
)

// need is the option that reads rows with a problem of kind k, given
// whether the import read its delivery times in a format of its own;
// "" for a kind no option reads.
func need(k problemKind, pattern bool) Need {
	switch k {
	case kindOtherUser:
		return NeedOperator
	case kindNoZone:
		return NeedTimezone
	case kindDelivered:
		if !pattern {
			return NeedDateFormat
		}
	}
	return ""
}

// addNeed is needs with n added once, in the order first needed.
func addNeed(needs []Need, n Need) []Need {
	if n == "" {
		return needs
	}
	for _, have := range needs {
		if have == n {
			return needs
		}
	}
	return append(needs, n)
}

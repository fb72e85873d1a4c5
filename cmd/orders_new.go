package cmd

import (
	"context"
	"errors"
	"io"

	"assistant/business"
	"assistant/flow/returns"
)

// importOrdersNewDir runs orders import into a data dir that does not
// exist (docs/orders.md "The first import"): the data dir is made aside
// under a temporary name (returns.NewDataDirAside), the file is checked
// while its orders are written (returns.ImportOrdersNew), and the data
// dir gets its name once the import has committed (PlaceDataDir). A bad
// file, a signal or a failure leave no data dir. When another process
// made the data dir meanwhile, or the directory cannot be renamed (a file
// system without RENAME_NOREPLACE), the checked orders are imported into
// the data dir at its name, as into any data dir that exists. handled is
// false, with nothing read from in and nothing left, when the data dir
// cannot be made aside (a parent that cannot be written, a name too long
// for its temporary one): the caller imports as into any data dir, the
// file checked first, so that a bad file is still refused for itself.
func (a *app) importOrdersNewDir(ctx context.Context, path string, in io.Reader, opts business.ParseOptions) (handled bool, err error) {
	dir := a.data
	tmp, discard, err := returns.NewDataDirAside(dir)
	if err != nil {
		return false, nil
	}
	placed := false
	defer func() {
		if !placed {
			discard()
		}
	}()
	// The two files, made (schemas, teaching orders) and closed: the
	// import writes the business file on a connection of its own.
	n := len(a.closers)
	a.data = tmp
	_, err = a.service(ctx, returns.CreateIfMissing)
	a.data = dir
	for _, closeStores := range a.closers[n:] {
		closeStores()
	}
	a.closers = a.closers[:n]
	if err != nil {
		return false, nil
	}
	res, file, err := returns.ImportOrdersNew(ctx, tmp, interruptible(ctx, in), opts)
	if errors.Is(err, business.ErrImportNotStarted) {
		return false, nil // nothing read: the ordinary import tells a bad file from a full disk
	}
	if file == nil {
		// The file is bad (or $TMPDIR failed): as ParseOrders says it.
		return true, inputError(err)
	}
	defer file.Close()
	if err != nil {
		return true, err
	}
	switch err := returns.PlaceDataDir(tmp, dir); {
	case errors.Is(err, returns.ErrDataDirTaken), errors.Is(err, returns.ErrNotPlaced):
		// Import the checked orders into the data dir at its name.
		discard()
		placed = true
		svc, err := a.service(ctx, returns.CreateIfMissing)
		if err != nil {
			return true, err
		}
		if res, err = svc.ImportOrdersFile(ctx, file, business.ImportOptions{}); err != nil {
			return true, err
		}
	case err != nil:
		// Renamed, and the rename perhaps not yet on disk.
		placed = true
		return true, err
	default:
		placed = true
		returns.Fault("import:after-commit")
	}
	return true, a.reportImport(path, res, opts.Operator)
}

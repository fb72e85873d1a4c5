package returns

import "context"

// Look is Wait's cheap look at a task's record, for the benchmark that
// compares it with Show (package returns_test).
func (s *Service) Look(ctx context.Context, task, user string) error {
	_, err := s.look(ctx, task, user)
	return err
}

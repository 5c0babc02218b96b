/** A mistake in how the command was called: reported with a pointer to --help, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Two jobs at once; when one fails, waits for the other to end too (so
 * nothing still writes into what the caller is about to remove), then
 * throws the first failure.
 */
export async function bothOrThrow<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b]);
  if (ra.status === 'rejected') throw ra.reason;
  if (rb.status === 'rejected') throw rb.reason;
  return [ra.value, rb.value];
}

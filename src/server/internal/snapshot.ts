/** Events carry a copy: the live object keeps changing after the event is sent. */
export function snapshot<T>(value: T): T {
  return structuredClone(value);
}

/**
 * A queue that is fair between keys: one FIFO lane per key, served round-robin, so a key with many
 * waiting requests cannot starve one with a single request. A key that arrives joins the end of
 * the rotation.
 */
export class FairQueue<T> {
  /** Lanes in rotation order: the first is served next, then moves to the end. */
  private readonly lanes = new Map<string, T[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(key: string, item: T): void {
    const lane = this.lanes.get(key);
    if (lane) lane.push(item);
    else this.lanes.set(key, [item]);
    this.count++;
  }

  /** Removes `item` wherever it waits; false when it is not queued. */
  remove(key: string, item: T): boolean {
    const lane = this.lanes.get(key);
    const at = lane?.indexOf(item) ?? -1;
    if (!lane || at === -1) return false;
    lane.splice(at, 1);
    if (lane.length === 0) this.lanes.delete(key);
    this.count--;
    return true;
  }

  /** The next item in fair order. */
  shift(): T | undefined {
    const first = this.lanes.entries().next();
    if (first.done) return undefined;
    const [key, lane] = first.value;
    const item = lane.shift()!;
    this.lanes.delete(key);
    if (lane.length > 0) this.lanes.set(key, lane);
    this.count--;
    return item;
  }

  /**
   * Every item's place in the order {@link shift} would serve them (1 = next). Round r serves the
   * r-th item of every lane longer than r, lanes in rotation order.
   */
  positions(): Map<T, number> {
    const positions = new Map<T, number>();
    let lanes = [...this.lanes.values()];
    let served = 0;
    for (let round = 0; lanes.length > 0; round++) {
      for (const lane of lanes) positions.set(lane[round]!, ++served);
      lanes = lanes.filter((lane) => lane.length > round + 1);
    }
    return positions;
  }
}

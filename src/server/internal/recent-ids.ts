/** A bounded set of ids, the least recently added forgotten first. */
export class RecentIds {
  private readonly ids = new Set<string>();

  /** @param max Ids remembered. */
  constructor(private readonly max: number) {}

  add(id: string): void {
    this.ids.delete(id);
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value!);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }
}

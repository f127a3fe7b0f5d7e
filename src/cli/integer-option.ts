import { InvalidArgumentError } from "commander";

/** A commander parser for a whole-number option from `min` to `max`; anything else is refused. */
export function integer(min: number, max: number) {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    }
    return n;
  };
}

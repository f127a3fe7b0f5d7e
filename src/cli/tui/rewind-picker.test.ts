import { expect, test } from "vitest";
import { pickerKey, type RewindPicker } from "./rewind-picker.js";

const points = [
  { id: "u2", text: "second", paths: ["a.txt"] },
  { id: "u1", text: "first", paths: [] },
];

test("the /rewind picker: arrows wrap, Enter picks a turn then what to take back, Esc steps back then closes", () => {
  let state: RewindPicker | null = { step: "turn", points, index: 0 };
  state = pickerKey(state, "up").state!;
  expect(state).toMatchObject({ step: "turn", index: 1 });
  state = pickerKey(state, "enter").state!;
  expect(state).toEqual({ step: "restore", points, turn: 1, index: 0 });
  state = pickerKey(state, "down").state!;
  // Esc goes back to the turns, on the one chosen; Enter there and down twice picks "code only".
  expect(pickerKey(state, "escape").state).toEqual({ step: "turn", points, index: 1 });
  state = pickerKey(state, "down").state!;
  const chosen = pickerKey(state, "enter");
  expect(chosen).toEqual({ state: null, chosen: { point: points[1], restore: "code" } });
  expect(pickerKey({ step: "turn", points, index: 0 }, "escape")).toEqual({ state: null });
});

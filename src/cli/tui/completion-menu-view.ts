import { Box, Text } from "ink";
import React from "react";
import type { CompletionMenu } from "./completion-menu.js";

const h = React.createElement;

/** The completion candidates under the prompt, the selected one highlighted, with the keys that pick. */
export function CompletionMenuView({ menu }: { menu: CompletionMenu }): React.ReactElement {
  return h(
    Box,
    { flexDirection: "column", paddingX: 2 },
    ...menu.items.map((item, index) =>
      h(
        Text,
        { key: item.value, wrap: "truncate-end" },
        index === menu.selected
          ? h(Text, { color: "cyan", bold: true }, `> ${item.value}`)
          : h(Text, null, `  ${item.value}`),
        item.description ? h(Text, { dimColor: true }, `  ${item.description}`) : null,
      ),
    ),
    h(Text, { dimColor: true }, "Up/Down choose, Tab or Enter insert, Esc close"),
  );
}

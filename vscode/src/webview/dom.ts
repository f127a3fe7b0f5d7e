/** Builds an element with its class, text, title and id, and appends its children (null ones skipped). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string; title?: string; id?: string } = {},
  ...children: (Node | string | null)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.className) element.className = props.className;
  if (props.text !== undefined) element.textContent = props.text;
  if (props.title) element.title = props.title;
  if (props.id) element.id = props.id;
  for (const child of children) if (child !== null) element.append(child);
  return element;
}

export function button(
  label: string,
  className: string,
  onClick: () => void,
  title?: string,
): HTMLButtonElement {
  const element = h("button", { className, text: label, ...(title ? { title } : {}) });
  element.addEventListener("click", onClick);
  return element;
}

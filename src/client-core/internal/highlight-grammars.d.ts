/** The grammars lowlight registers (`import bash from "highlight.js/lib/languages/bash"`). */
declare module "highlight.js/lib/languages/*" {
  const grammar: import("highlight.js").LanguageFn;
  export default grammar;
}

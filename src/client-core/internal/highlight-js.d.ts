/**
 * The one type of highlight.js that lowlight's declarations use. tsconfig.json's `paths` points
 * "highlight.js" here for type checking only (nothing imports it at run time): highlight.js's own
 * declarations reference the DOM library, which would put browser globals into the Node program.
 */
export type LanguageFn = (hljs: unknown) => unknown;

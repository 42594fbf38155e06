/** Stylesheets imported as text (the standalone viewer's bundler inlines them). */
declare module '*.css' {
  const text: string;
  export default text;
}

/** Entry point of the web console (issue 15): styles, then the app into `#root`. */
import "@picocss/pico/css/pico.min.css";
import "./styles.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App, makeQueryClient } from "./app.tsx";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App queryClient={makeQueryClient()} />
  </StrictMode>,
);

/**
 * A form's failed call shown where it belongs: the gateway names the request field at fault in the D1
 * `error.param` (`spend_limit_usd`, `models`...), so the message goes under that field (which is marked
 * `aria-invalid` and described by it); an error of no field of the form goes to an {@link ErrorNotice}.
 *
 * ```tsx
 * const errs = fieldErrors(mutation.error, ["rpm", "models"], "create-key");
 * <input id="create-key-rpm" {...errs.input("rpm")} />
 * <FieldError errors={errs} field="rpm" />
 * {errs.other && <ErrorNotice error={errs.other} />}
 * ```
 */
import { GatewayError } from "../api.ts";
import { ErrorNotice } from "./states.tsx";

/** The errors of one form: which field is at fault, and the error no field takes. */
export interface FormErrors {
  /** The field named by the error's `param` (its top-level name: `models[1]` -> `models`), if the form has it. */
  field: string | null;
  /** The message of that field's error. */
  message: string | null;
  /** The error when no field of the form takes it (shown with ErrorNotice), else null. */
  other: unknown;
  /** The id of a field's error text (`<idPrefix>-<field>-error`). */
  errorId: (field: string) => string;
  /** `aria-invalid` and `aria-describedby` for a field's input (`describedBy`: its help text's id). */
  input: (field: string, describedBy?: string) => { "aria-invalid"?: true; "aria-describedby"?: string };
}

/** The {@link FormErrors} of `error` (a failed mutation's, or null) for a form with `fields`. */
export function fieldErrors(error: unknown, fields: readonly string[], idPrefix: string): FormErrors {
  const param = error instanceof GatewayError && error.param ? error.param.split(/[.[]/)[0]! : null;
  const field = param !== null && fields.includes(param) ? param : null;
  const errorId = (f: string) => `${idPrefix}-${f}-error`;
  return {
    field,
    message: field !== null && error instanceof Error ? error.message : null,
    other: field === null && error ? error : null,
    errorId,
    input: (f, describedBy) => {
      const ids = [describedBy, f === field ? errorId(f) : undefined].filter(Boolean).join(" ");
      return { ...(f === field ? { "aria-invalid": true as const } : {}), ...(ids ? { "aria-describedby": ids } : {}) };
    },
  };
}

/** The error text under `field` when the form's error is that field's; nothing otherwise. */
export function FieldError({ errors, field }: { errors: FormErrors; field: string }) {
  if (errors.field !== field) return null;
  return (
    <small id={errors.errorId(field)} role="alert" className="field-error">
      {errors.message}
    </small>
  );
}

/** The form's error that no field takes, as an {@link ErrorNotice}. */
export function OtherError({ errors }: { errors: FormErrors }) {
  return errors.other ? <ErrorNotice error={errors.other} /> : null;
}

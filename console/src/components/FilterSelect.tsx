/**
 * A labelled `<select>` filter of a list page: "any" (the empty value) first, then `options`. A value that
 * is not among the options (one kept in the URL that the catalog no longer lists) stays selectable, so a
 * shared or bookmarked link shows what it filters on.
 */
export function FilterSelect({
  id,
  label,
  value,
  anyLabel,
  options,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  /** The text of the empty choice, e.g. "Any status". */
  anyLabel: string;
  options: readonly string[];
  onChange: (value: string) => void;
}) {
  return (
    <div>
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{anyLabel}</option>
        {value && !options.includes(value) && <option value={value}>{value}</option>}
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * A bar chart on Chart.js (react-chartjs-2), with the data also given as a table for screen readers: a
 * canvas says nothing to them.
 */
import { BarElement, CategoryScale, Chart as ChartJS, Legend, LinearScale, Tooltip, type ChartOptions } from "chart.js";
import { Bar } from "react-chartjs-2";

// Only the parts a bar chart needs (tree-shaken bundle).
ChartJS.register(BarElement, CategoryScale, LinearScale, Legend, Tooltip);

/** One series: a label and one value per category. */
export interface Series {
  label: string;
  values: number[];
  color: string;
}

/**
 * Bars of `series` over `categories`. `format` renders a value (axis ticks, tooltips, the table).
 * `label` names the chart for assistive technology; `categoryLabel` heads the categories in the table.
 */
export function BarChart({
  label,
  categoryLabel,
  categories,
  series,
  format,
}: {
  label: string;
  categoryLabel: string;
  categories: string[];
  series: Series[];
  format: (v: number) => string;
}) {
  const options: ChartOptions<"bar"> = {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    plugins: {
      legend: { position: "bottom" },
      tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${format(item.parsed.y ?? 0)}` } },
    },
    scales: { y: { beginAtZero: true, ticks: { callback: (v) => format(Number(v)) } } },
  };
  return (
    <figure className="chart">
      <div className="chart-canvas" role="img" aria-label={label}>
        <Bar
          options={options}
          data={{ labels: categories, datasets: series.map((s) => ({ label: s.label, data: s.values, backgroundColor: s.color })) }}
        />
      </div>
      <details>
        <summary>{label}: as a table</summary>
        <div className="overflow-auto">
          <table>
            <thead>
              <tr>
                <th scope="col">{categoryLabel}</th>
                {series.map((s) => (
                  <th key={s.label} scope="col" className="numeric">
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {categories.map((c, i) => (
                <tr key={c}>
                  <th scope="row">{c}</th>
                  {series.map((s) => (
                    <td key={s.label} className="numeric">
                      {format(s.values[i])}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

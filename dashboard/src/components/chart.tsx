/** A time-series line chart (uPlot) that follows the width of its container. */

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

/** One line: its legend label, colour and one value per timestamp. */
export interface Line {
  label: string;
  color: string;
  values: (number | null)[];
}

/**
 * Lines over `times` (Unix seconds). The chart keeps its height, so the page does not move when
 * data arrives; `format` renders values on the axis and in the legend.
 */
export function TimeChart(props: {
  times: number[];
  lines: Line[];
  height?: number;
  format?: (value: number) => string;
  testId?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const height = props.height ?? 220;
  const shape = props.lines.map((l) => `${l.label}:${l.color}`).join("|");
  const format = props.format;

  useEffect(() => {
    const element = box.current;
    if (!element) return undefined;
    const value = (v: number | null) =>
      v === null || v === undefined ? "—" : format ? format(v) : String(v);
    const options: uPlot.Options = {
      width: Math.max(200, element.clientWidth),
      height,
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      scales: {
        x: { time: true },
        y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max * 1.1)] },
      },
      axes: [
        { stroke: "#6b7280", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#e5e7eb" } },
        {
          stroke: "#6b7280",
          grid: { stroke: "#eef0f3" },
          ticks: { stroke: "#e5e7eb" },
          size: 70,
          values: (_u, splits) => splits.map((v) => value(v)),
        },
      ],
      series: [
        {},
        ...props.lines.map((line) => ({
          label: line.label,
          stroke: line.color,
          width: 2,
          fill: `${line.color}14`,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => value(v),
        })),
      ],
    };
    const chart = new uPlot(options, [props.times, ...props.lines.map((l) => l.values)], element);
    plot.current = chart;
    const observer = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(200, element.clientWidth), height }),
    );
    observer.observe(element);
    return () => {
      observer.disconnect();
      chart.destroy();
      plot.current = null;
    };
    // The chart is rebuilt only when its lines change; new data goes through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, height, format]);

  useEffect(() => {
    const chart = plot.current;
    if (!chart) return;
    chart.setData([props.times, ...props.lines.map((l) => l.values)]);
    // Without a pointer over the chart, the legend shows the latest values.
    if (props.times.length > 0) chart.setLegend({ idx: props.times.length - 1 });
  }, [props.times, props.lines]);

  return <div ref={box} class="chart" style={{ minHeight: `${height + 32}px` }} data-testid={props.testId} />;
}

/** Number formats shared by the progress lines and the report. */
export const kib = (value: number) => value.toFixed(2);
export const mib = (valueKiB: number) => (valueKiB / 1024).toFixed(1);
export const whole = (value: number) => Math.round(value).toLocaleString('en-US');
export const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
export const cores = (value: number) => value.toFixed(2);
export const verdict = (met: boolean) => (met ? '**met**' : '**not met**');

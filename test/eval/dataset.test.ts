import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadFileList, loadLabelledPhotos } from '../../src/eval/dataset.ts';

async function folderWith(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'meterlens-eval-'));
  for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, name), content);
  return dir;
}

t.test('labels with alternatives; the label itself is not repeated among them', async (t) => {
  const dir = await folderWith({
    'labels.csv': 'file,reading,alternatives,quad\na.jpg,00720,00720|00721,1 2 3 4\nb.jpg,00005,00005,1 2\n',
  });
  t.same(await loadLabelledPhotos(dir), [
    { file: 'a.jpg', accepted: ['00720', '00721'] },
    { file: 'b.jpg', accepted: ['00005'] },
  ]);
});

t.test('columns are found by name; extra columns such as boxes are ignored', async (t) => {
  const dir = await folderWith({ 'labels.csv': 'file,reading,x1,y1,x2,y2\r\nimages/a.jpg,13.116,1,2,3,4\r\n' });
  t.same(await loadLabelledPhotos(dir), [{ file: 'images/a.jpg', accepted: ['13.116'] }]);
});

t.test('a file list keeps only the photos it names', async (t) => {
  const dir = await folderWith({
    'labels.csv': 'file,reading\na.jpg,1\nb.jpg,2\nc.jpg,3\n',
    'val.txt': 'a.jpg\n\nc.jpg\n',
  });
  const only = await loadFileList(path.join(dir, 'val.txt'));
  t.same(
    (await loadLabelledPhotos(dir, only)).map((p) => p.file),
    ['a.jpg', 'c.jpg'],
  );
});

t.test('labels.csv without file and reading columns is refused', async (t) => {
  const dir = await folderWith({ 'labels.csv': 'name,value\na.jpg,1\n' });
  await t.rejects(loadLabelledPhotos(dir), /needs "file" and "reading"/);
});

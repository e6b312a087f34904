#pragma once
// File ▸ Open Database…: a ClickHouse table of flow records (clickhouse://HOST:PORT/DB.TABLE), the topology
// of the cluster it comes from, and optionally a time window. What it gives is opened like files are.
#include <QDialog>

class QLabel;
class QLineEdit;

namespace prism::ui {

class DatabaseDialog : public QDialog {
    Q_OBJECT
public:
    explicit DatabaseDialog(QWidget* parent = nullptr);
    // The sources to open (the table's URL, with ?from=&to= when a window is given, then the topology file when
    // one is given); empty, with `error` saying what is wrong, when the fields do not make a source.
    QStringList sources(QString* error = nullptr) const;
    void accept() override; // only with fields that make a source; remembers them for next time

private:
    QLineEdit* m_url;
    QLineEdit* m_topology;
    QLineEdit* m_from;
    QLineEdit* m_to;
    QLabel* m_error;
};

} // namespace prism::ui
